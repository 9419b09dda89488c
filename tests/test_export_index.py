"""Exports that read only what they select: the store's WARC index (fed by warc_created through the monitor)
against the listing of the data root. Expected WARCs are worked out from the generator's manifest
(bench/gen_archive.py), expected rows by reading the WARCs with warcio."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.export_index import StoreIndex
from swath.export_index import run_export as run_indexed_export
from swath.exporters.base import run_export
from swath.exporters.scans import CACHE_DIR
from swath.exporters.warc_index import ScanIndex
from swath.messages import codes
from swath.messages.model import ExportStart
from swath.monitor import record
from swath.store import Store
from swath.store.models import Job, Source, WarcSeed
from tests.generated import bench_module
from tests.requesterkit import db_url, pg_url  # noqa: F401  (fixtures)
from tests.test_export import expected_items

gen = bench_module("gen_archive")
SEARCH = "export.start.twitter.twitter_search_2"
SFM_LIKE = {25, 26}  # announced without seeds, as SFM's harvesters do: every seed export reads them


def build(root: Path, store: Store, *, warcs: int = 40, skip: frozenset[int] = frozenset(),
          monitor_root: Path | None = None) -> list[dict[str, Any]]:
    """40 WARCs: collections of 10, seeds of 4 (seed-2 spans c0000 and c0001); each announced through the
    monitor's record() (its data root: `monitor_root`, else `root`) except `skip`. Returns the manifest's entries."""
    manifest = gen.generate(out=root, warcs=warcs, per_collection=10, seed_warcs=4, seed_items=40, other_items=3)
    for entry, body in zip(manifest["warcs"], manifest["messages"], strict=True):
        if entry["n"] in skip:
            continue
        if entry["n"] in SFM_LIKE:
            body = {k: v for k, v in body.items() if k != "seeds"}
        record(store, "warc_created", body, data_root=monitor_root or root)
    return manifest["warcs"]


def start(**fields: Any) -> ExportStart:
    body = {"id": "x", "type": "twitter_search_2", "path": "exports/x", "format": "csv", **fields}
    return ExportStart.from_dict(body)


def paths(entries: list[dict[str, Any]], root: Path | None = None) -> list[Path]:
    found = [Path(e["path"]) for e in entries]
    if root is not None:  # the same files under a moved data root
        found = [root / p.relative_to(p.parents[3]) for p in found]
    return sorted((Path(os.path.realpath(p)) for p in found), key=str)


def date(n: int) -> str:
    return gen.warc_date(n).isoformat()


CASES = {
    "collection": ({"collection": {"id": "c0001"}}, lambda e: e["collection"] == "c0001"),
    "seed by id": ({"seeds": [{"id": "seed-2", "uid": None}]}, lambda e: e["seed"] == "seed-2" or e["n"] in SFM_LIKE),
    "seed by uid": ({"seeds": [{"id": "not-a-harvest-seed", "uid": "1003"}]},
                    lambda e: e["seed"] == "seed-3" or e["n"] in SFM_LIKE),
    # a seed id the index knows reads its own harvests only, though its uid (seed-3's) is harvested elsewhere too
    "known seed id, a uid shared": ({"seeds": [{"id": "seed-2", "uid": "1003"}]},
                                    lambda e: e["seed"] == "seed-2" or e["n"] in SFM_LIKE),
    "collection, harvest dates": ({"collection": {"id": "c0002"}, "harvest_date_start": date(22),
                                   "harvest_date_end": date(27)},
                                  lambda e: e["collection"] == "c0002" and 22 <= e["n"] <= 27),
    "seeds, harvest start": ({"seeds": [{"id": "seed-0", "uid": "1000"}, {"id": "seed-6", "uid": "1006"}],
                              "harvest_date_start": date(2)},
                             lambda e: (e["seed"] in ("seed-0", "seed-6") or e["n"] in SFM_LIKE) and e["n"] >= 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_index_selects_exactly_the_warcs_of_the_collection_seeds_and_harvest_dates(
        config: Config, db_url: str, case: str) -> None:  # noqa: F811
    store = Store(url=db_url)
    entries = build(config.data_root, store)
    fields, wanted = CASES[case]
    selected = StoreIndex(store=store, data_root=config.data_root).select(start(**fields))
    expected = paths([e for e in entries if wanted(e)])
    assert 0 < len(expected) < len(entries)
    assert selected.warcs == expected
    assert (selected.infos, selected.warnings) == ([], [])  # the index answered: no listing, nothing unindexed
    store.close()


def export(config: Config, body: dict[str, Any], index: Any, name: str) -> tuple[dict[str, Any], list[bytes]]:
    statuses: list[dict[str, Any]] = []
    ctx = JobContext(config=config, publish=lambda key, status: statuses.append(status), service="test")
    message = {"id": name, "type": "twitter_search_2", "path": f"exports/{name}", **body}
    if index is None:
        run_indexed_export(message, routing_key=SEARCH, ctx=ctx, workers=1)
    else:
        run_export(message, routing_key=SEARCH, ctx=ctx, index=index, workers=1)
    files = sorted((config.data_root / "exports" / name).iterdir())
    return statuses[-1], [f.read_bytes() for f in files]


def codes_of(notes: list[dict[str, Any]]) -> list[str]:
    return [n["code"] for n in notes]


@pytest.mark.parametrize("body", [
    {"seeds": [{"id": "seed-0", "uid": "1000"}], "format": "csv"},
    {"seeds": [{"id": "seed-2", "uid": "1002"}], "format": "json", "harvest_date_end": date(9)},
    {"collection": {"id": "c0001"}, "format": "tsv", "dedupe": True},
], ids=["seed", "seed-dates", "collection"])
def test_an_export_through_the_index_writes_what_the_listing_writes(config: Config, body: dict[str, Any]) -> None:
    store = Store(url=config.db_url)
    build(config.data_root, store)
    indexed, indexed_files = export(config, body, StoreIndex(store=store, data_root=config.data_root), "indexed")
    listed, listed_files = export(config, body, ScanIndex(data_root=config.data_root), "listed")
    assert indexed["status"] == listed["status"] == "completed success", (indexed, listed)
    assert indexed["items"] == listed["items"] > 0
    assert indexed_files == listed_files
    assert codes.WARC_INDEX_SCAN not in codes_of(indexed["infos"])
    assert codes.WARC_INDEX_SCAN in codes_of(listed["infos"])  # the listing says it is one
    store.close()


def expected_rows(entries: list[dict[str, Any]], seed: str) -> int:
    """The seed's tweets, read back from its WARCs with warcio."""
    return len(expected_items([Path(e["path"]) for e in entries if e["seed"] == seed], "twitter_v2"))


def scanned(root: Path) -> list[Path]:
    """The WARCs an export read: each one read leaves its record scan under .swath/records (exporters/scans.py)."""
    return sorted((Path(orjson.loads(p.read_bytes())["warc"]) for p in (root / CACHE_DIR).glob("*.json")), key=str)


def test_the_index_reads_only_the_selected_warcs(config: Config) -> None:
    store = Store(url=config.db_url)
    entries = build(config.data_root, store)
    body = {"seeds": [{"id": "seed-4", "uid": "1004"}], "format": "csv"}
    indexed, _ = export(config, body, StoreIndex(store=store, data_root=config.data_root), "indexed")
    assert indexed["items"] == expected_rows(entries, "seed-4") > 0
    assert scanned(config.data_root) == paths([e for e in entries if e["seed"] == "seed-4" or e["n"] in SFM_LIKE])
    listed, _ = export(config, body, ScanIndex(data_root=config.data_root), "listed")
    assert listed["items"] == indexed["items"]
    assert scanned(config.data_root) == paths(entries)  # the listing reads every WARC under the data root
    store.close()


def test_without_an_index_the_export_lists_the_data_root_and_says_so(config: Config, tmp_path: Path) -> None:
    entries = gen.generate(out=config.data_root, warcs=12, per_collection=6, seed_warcs=3, seed_items=9)["warcs"]
    body = {"seeds": [{"id": "seed-1", "uid": "1001"}], "format": "csv"}
    items = sum(e["items"] for e in entries if e["seed"] == "seed-1")
    assert not Path(config.db_url.removeprefix("sqlite:///")).exists()
    status, _ = export(config, body, None, "no-store")  # the worker's job: no store was ever made
    assert status["status"] == "completed success" and status["items"] == items
    notes = [n for n in status["infos"] if n["code"] == codes.WARC_INDEX_SCAN]
    assert len(notes) == 1 and "no store" in notes[0]["message"]
    assert f"the {len(entries)} WARC(s)" in notes[0]["message"]
    assert not Path(config.db_url.removeprefix("sqlite:///")).exists()  # asking made no store

    Store(url=config.db_url).close()  # a store whose index holds none of these WARCs (SFM wrote them)
    status, _ = export(config, body, None, "empty-index")
    assert status["status"] == "completed success" and status["items"] == items
    assert "holds no WARC of these seeds" in [n for n in status["infos"] if n["code"] == codes.WARC_INDEX_SCAN][0][
        "message"]

    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"this is not a database" * 100)
    status, _ = export(dataclasses.replace(config, db_url=f"sqlite:///{broken}"), body, None, "broken")
    assert status["status"] == "completed success" and status["items"] == items
    unavailable = [n["message"] for n in status["warnings"] if n["code"] == codes.WARC_INDEX_UNAVAILABLE]
    assert len(unavailable) == 1 and "could not be read" in unavailable[0] and "listing the data root" in unavailable[0]


def test_unindexed_warcs_are_read_and_missing_ones_reported(config: Config) -> None:
    store = Store(url=config.db_url)
    entries = build(config.data_root, store, skip=frozenset({1}))  # WARC 1 (seed-0) was never announced
    gone = Path(entries[2]["path"])
    gone.unlink()
    status, _ = export(config, {"seeds": [{"id": "seed-0", "uid": "1000"}], "format": "csv"},
                       StoreIndex(store=store, data_root=config.data_root), "holes")
    assert status["status"] == "completed success", status
    assert status["items"] == sum(e["items"] for e in entries if e["seed"] == "seed-0" and e["n"] != 2)
    unindexed = [n["message"] for n in status["infos"] if n["code"] == codes.WARC_UNINDEXED]
    assert len(unindexed) == 1 and unindexed[0].startswith("1 WARC(s)")
    assert Path(entries[1]["path"]).name in unindexed[0]
    missing = [n["message"] for n in status["warnings"] if n["code"] == codes.WARC_MISSING]
    assert len(missing) == 1 and gone.name in missing[0]
    store.close()


def test_the_index_follows_a_moved_data_root(config: Config, tmp_path: Path) -> None:
    old = tmp_path / "old-root"
    store = Store(url=f"sqlite:///{tmp_path / 'store.sqlite'}")
    entries = build(old, store)
    new = tmp_path / "new-root"
    old.rename(new)
    selected = StoreIndex(store=store, data_root=new).select(start(seeds=[{"id": "seed-5", "uid": "1005"}]))
    assert selected.warcs == paths([e for e in entries if e["seed"] == "seed-5" or e["n"] in SFM_LIKE], new)
    assert selected.warnings == []
    store.close()


def test_an_index_entry_outside_the_data_root_is_reported_not_read(config: Config, tmp_path: Path) -> None:
    store = Store(url=config.db_url)
    elsewhere = tmp_path / "elsewhere"
    entries = build(elsewhere, store, warcs=8, monitor_root=config.data_root)  # announced outside the data root
    selected = StoreIndex(store=store, data_root=config.data_root).select(start(collection={"id": "c0000"}))
    assert selected.warcs == []
    assert codes_of([{"code": c} for c, _ in selected.warnings]) == [codes.PATH_OUTSIDE_DATA_ROOT] * len(entries)
    store.close()


def test_the_monitor_takes_a_warcs_seeds_from_the_source_it_launched(config: Config) -> None:
    store = Store(url=config.db_url)
    manifest = gen.generate(out=config.data_root, warcs=2, per_collection=2, seed_warcs=1, seed_items=2)
    with store.session() as s:
        s.add(Source(id="src1", name="src1", harvest_type="twitter_search_2", platform="twitter",
                     seeds=[{"id": "seed-a", "uid": "77", "token": "q"}], collection_set_id="set1",
                     collection_id="c0000"))
        s.flush()
        s.add(Job(id="h-launched", source_id="src1", harvest_type="twitter_search_2", routing_key="harvest.start.x"))
    launched, external = ({k: v for k, v in body.items() if k != "seeds"} for body in manifest["messages"])
    launched["harvest"]["id"] = "h-launched"
    record(store, "warc_created", launched, data_root=config.data_root)
    record(store, "warc_created", external, data_root=config.data_root)
    record(store, "warc_created", launched, data_root=config.data_root)  # a redelivery adds nothing
    with store.session() as s:
        assert [(w.warc_id, w.seed_id, w.uid) for w in s.query(WarcSeed)] == [("w0", "seed-a", "77")]
    index = StoreIndex(store=store, data_root=config.data_root)
    by_uid = index.select(start(seeds=[{"id": "x", "uid": "77"}]))
    assert by_uid.warcs == paths(manifest["warcs"])  # w0 by its source's seed, w1 since its seeds are unknown
    assert index.select(start(seeds=[{"id": "x", "uid": "78"}])).warcs == paths(manifest["warcs"][1:])
    store.close()


def test_a_date_range_outside_every_warc_is_an_empty_export_not_a_missing_one(config: Config) -> None:
    store = Store(url=config.db_url)
    build(config.data_root, store)
    later = (gen.warc_date(40) + dt.timedelta(days=1)).isoformat()
    status, files = export(config, {"collection": {"id": "c0000"}, "format": "csv", "harvest_date_start": later},
                           StoreIndex(store=store, data_root=config.data_root), "late")
    assert status["status"] == "completed success" and status["items"] == 0
    assert codes_of(status["warnings"]) == [codes.EXPORT_EMPTY] and "10 WARC(s)" in status["warnings"][0]["message"]
    assert len(files) == 1  # the primary table's file, empty but for its header
    store.close()




def test_hostile_index_fields_leave_a_warc_selectable_not_a_monitor_stuck(config: Config, db_url: str) -> None:  # noqa: F811
    store = Store(url=db_url)
    manifest = gen.generate(out=config.data_root, warcs=3, per_collection=3, seed_warcs=1, seed_items=3)
    long_seed, backwards, fine = manifest["messages"]
    long_seed["seeds"] = [{"id": "s" * 300, "uid": "1000"}]  # longer than the column: PostgreSQL would refuse it
    backwards["warc"]["date_first"], backwards["warc"]["date_last"] = date(5), date(1)
    for body in (long_seed, backwards, fine):
        record(store, "warc_created", body, data_root=config.data_root)
    index = StoreIndex(store=store, data_root=config.data_root)
    first, second, third = manifest["warcs"]
    # the long seed's WARC has unknown seeds: every seed export reads it
    assert index.select(start(seeds=[{"id": "seed-2", "uid": "1002"}])).warcs == paths([first, third])
    # the backwards range counts as none: no harvest date leaves that WARC out
    assert index.select(start(collection={"id": "c0000"}, harvest_date_start=date(3))).warcs == paths([second])
    store.close()
