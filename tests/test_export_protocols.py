"""Exports of the protocol harvesters' items: harvest with the real harvesters against their fakes, export,
and compare with what the WARCs hold (latest record per item, deletions left out), worked out here."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from warcio.archiveiterator import ArchiveIterator

from swath.exporters import registry
from swath.harvesters import registry as harvest_registry
from swath.harvesters.run import run_harvest
from swath.platforms.metashare.server import NodeServer
from swath.platforms.metashare.storage import LRStorage
from tests.backendkit import harvest
from tests.enginekit import context
from tests.fakes.ckan import CKANPortal
from tests.fakes.dcat import DCATPortal
from tests.fakes.oai import SickleEndpoint
from tests.fakes.ods import ODSPortal
from tests.metasharekit import USERS, fixture_xml, node_storage
from tests.test_export import export, read_rows, run  # noqa: F401 - fixture
from tests.xesamkit import bus_config_fixture, bus_fixture, serve_fixture  # noqa: F401 - fixtures

PATH = "collections/cs-1/c-1"  # the harvest path ends in the collection id, as the export finds it


def records(data_root: Path, item_type: str = "dataset") -> list[tuple[dict[str, str], bytes]]:
    """(WARC headers, payload) of every swath item record under the data root, harvest after harvest."""
    out = []
    warcs = sorted(data_root.rglob("*.warc.gz"), key=lambda p: p.stat().st_mtime_ns)
    for path in warcs:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type in ("resource", "metadata"):
                    headers = dict(rec.rec_headers.headers)
                    if item_type in (headers.get("WARC-Swath-Item-Type"), headers.get("Content-Type")):
                        out.append((headers, rec.content_stream().read()))
    return out


def current_datasets(data_root: Path) -> dict[str, dict[str, Any]]:
    """docs/metadata-harvesting.md's rule: the last record per (source_id, id) in WARC order, deletions out."""
    last: dict[tuple[str, str], dict[str, Any]] = {}
    for _, payload in records(data_root):
        record = orjson.loads(payload)
        last[(record["harvest"]["source_id"], record["id"])] = record
    return {rid: r for (_, rid), r in last.items() if r["status"] != "deleted"}


def exported(run, type_: str, tmp: Path, **fields) -> list[dict[str, Any]]:
    status = run(export(type_, "c-1", **fields))
    assert status["status"] == "completed success", status["errors"]
    assert len(status["files"]) == 1
    return read_rows(Path(status["files"][0]))


def test_protocol_types_route_as_their_harvesters():
    for name in ("oai_pmh", "dcat", "ckan", "opendatasoft", "metashare_sync", "xesam_pmh"):
        platform = harvest_registry.lookup(name).platform
        assert registry.start_routing_key(name) == f"export.start.{platform}.{name}"


def test_oai_records_current_ones_only(run, config, fixtures_dir):
    endpoint = SickleEndpoint(fixtures_dir)
    with endpoint.server as server:
        first = harvest(config, "oai_pmh", f"{server.url}/oai", path=PATH)
        expected = current_datasets(config.data_root)
        rows = exported(run, "oai_pmh", config.data_root)
        endpoint.overrides["ListRecords"] = "noRecordsMatch.xml"  # everything disappeared
        harvest(config, "oai_pmh", f"{server.url}/oai", path=PATH, options={"incremental": False})
    assert first.by_status("deleted") and expected  # the chain has marked deletions and live records
    assert set(expected) == set(first.by_status("done"))
    assert sorted(r["id"] for r in rows) == sorted(expected)
    for row in rows:
        record = expected[row["id"]]
        assert row["title"] == (record["dataset"]["title"] or "")
        assert row["source_id"] == "seed-1" and row["backend"] == "oai_pmh"
        assert json.loads(row["extras"]) == record["dataset"]["extras"]
    assert current_datasets(config.data_root) == {}
    assert exported(run, "oai_pmh", config.data_root, id="exp2") == []


def test_ckan_changed_and_removed_datasets(run, config):
    portal = CKANPortal(count=30)
    with portal.server as server:
        harvest(config, "ckan", server.url, path=PATH)
        removed = [portal.packages.pop(5)["id"], portal.packages.pop(0)["id"]]
        portal.touch(3)
        portal.packages[3]["title"] = "a changed title"
        second = harvest(config, "ckan", server.url, path=PATH, options={"incremental": False})
    assert set(second.by_status("deleted")) == set(removed)
    expected = current_datasets(config.data_root)
    assert set(expected) == {p["id"] for p in portal.packages}
    # dedupe off in the message: a current-state table keeps the latest copy anyway
    rows = exported(run, "ckan", config.data_root, format="json", dedupe=False)
    assert sorted(r["id"] for r in rows) == sorted(expected)
    by_id = {r["id"]: r for r in rows}
    assert by_id[portal.packages[3]["id"]]["title"] == "a changed title"
    for rid, record in expected.items():
        assert by_id[rid]["resources"] == len(record["dataset"]["resources"])
        assert by_id[rid]["last_update"] == record["harvest"]["last_update"]


def test_dcat_datasets_and_a_dedupe_spanning_harvests(run, config):
    portal = DCATPortal(syntax="jsonld", count=9, per_page=4)
    with portal.server as server:
        harvest(config, "dcat", f"{server.url}/catalog", path=PATH)
        harvest(config, "dcat", f"{server.url}/catalog", path=PATH)
    expected = current_datasets(config.data_root)
    assert set(expected) == {d.identifier for d in portal.spec.datasets}
    rows = exported(run, "dcat", config.data_root, format="tsv")
    assert sorted(r["id"] for r in rows) == sorted(expected)  # harvested twice, exported once
    for row in rows:
        dataset = expected[row["id"]]["dataset"]
        assert row["tags"] == ", ".join(dataset["tags"])
        assert (row["temporal_start"], row["license"]) == (dataset["temporal_coverage"]["start"], dataset["license"])


def test_opendatasoft_removed_dataset_left_out(run, config):
    portal = ODSPortal(count=12)
    with portal.server as server:
        harvest(config, "opendatasoft", server.url, path=PATH)
        gone = portal.datasets.pop(4)["dataset_id"]
        harvest(config, "opendatasoft", server.url, path=PATH)
    expected = current_datasets(config.data_root)
    assert gone not in expected and set(expected) == {d["dataset_id"] for d in portal.datasets}
    rows = exported(run, "opendatasoft", config.data_root, format="xlsx")
    assert sorted(r["id"] for r in rows) == sorted(expected)
    # json_full: each current dataset's record exactly as the harvester wrote it
    status = run(export("opendatasoft", "c-1", id="full", format="json_full"))
    lines = Path(status["files"][0]).read_bytes().splitlines()
    written = {orjson.loads(payload)["id"]: payload for _, payload in records(config.data_root)}
    assert sorted(lines) == sorted(written[rid] for rid in expected)


# ---------- META-SHARE ----------

def _sync(config, url: str, harvest_id: str) -> dict:
    body = {"id": harvest_id, "type": "metashare_sync", "path": PATH, "seeds": [{"id": "node-1", "token": url}],
            "credentials": {"username": "harvester", "password": USERS["harvester"]},
            "collection_set": {"id": "cs-1"}, "collection": {"id": "c-1"}}
    ctx, published = context(config)
    run_harvest(body, routing_key="harvest.start.metashare.metashare_sync", ctx=ctx)
    return published.statuses[-1]


def test_metashare_resources_follow_the_latest_inventory(run, config, tmp_path, fixtures_dir):
    documents = fixture_xml(fixtures_dir)
    source = node_storage(tmp_path / "node", documents)
    with NodeServer(storage=source, users=USERS) as node:
        assert _sync(config, node.url, "ms:1")["status"] == "completed success"
        ids = sorted(source.ids())
        edited, deleted = ids[0], ids[1]
        path = source.root / edited / "metadata.xml"
        path.write_bytes(path.read_bytes() + b"<!-- edited -->")
        source.delete(deleted)
        assert _sync(config, node.url, "ms:2")["status"] == "completed success"
    local = LRStorage(root=config.data_root / PATH / "lr-storage")
    assert sorted(local.ids()) == sorted(source.ids()) and deleted not in set(local.ids())
    rows = exported(run, "metashare_sync", config.data_root)
    assert sorted(r["id"] for r in rows) == sorted(local.ids())
    by_id = {r["id"]: r for r in rows}
    for identifier in local.ids():
        lr = local.get(identifier)
        storage = json.loads(lr.storage_json)
        assert by_id[identifier]["checksum"] == lr.checksum  # the copy the storage holds
        assert by_id[identifier]["revision"] == str(storage["revision"])
        assert by_id[identifier]["node"] == node.url.rstrip("/")
    assert by_id[edited]["revision"] == "2"  # the node bumped it; the export has the second copy
    names = {r["resource_name"] for r in rows}
    assert "full-corpus-text" in names or "REVEAL-THIS Corpus" in names


# ---------- Xesam ----------

def test_xesam_live_payloads_and_full_dump_supersedes(run, config, bus_config, serve, tmp_path):
    from tests.enginekit import wait_for
    from tests.xesamkit import harvest as xesam_harvest
    from tests.xesamkit import make_records, start_message, write_record

    directory = tmp_path / "recs"
    make_records(directory, 6)
    running = serve(directory)

    def crawl(harvest_id: str) -> None:
        body = {**start_message(harvest_id=harvest_id), "path": PATH, "collection": {"id": "c-1"}}
        final = xesam_harvest(bus_config, body).statuses[-1]
        assert final["status"] == "completed success", final["errors"]

    crawl("x:1")
    write_record(directory, "r002", uri="file:///mail/002", mtime=1, fields={"title": "edited", "size": "9"})
    (directory / "r004.json").unlink()
    entries = running.target.index.entries
    wait_for(lambda: entries["file:///mail/004"].deleted and entries["file:///mail/002"].fields[0][1] == "edited")
    crawl("x:2")

    def expected() -> dict[str, dict]:
        """docs/xesam.md's rule, from the WARCs: latest generation per target, last payload per uri, live."""
        bodies = [orjson.loads(p) for _, p in records(config.data_root, "application/vnd.swath.xesam-pmh+json")]
        top = max(b["generation"] for b in bodies)
        last = {b["uri"]: b for b in bodies if b["kind"] == "payload" and b["generation"] == top}
        return {uri: b for uri, b in last.items() if not b["deleted"]}

    rows = exported(run, "xesam_pmh", config.data_root, format="json")
    want = expected()
    assert "file:///mail/004" not in want and len(want) == 5
    assert sorted(r["id"] for r in rows) == sorted(want)
    by_id = {r["id"]: r for r in rows}
    assert by_id["file:///mail/002"]["title"] == "edited" and by_id["file:///mail/002"]["size"] == "9"
    some = next(uri for uri in want if uri != "file:///mail/002")
    tags = [v for k, v in want[some]["fields"] if k == "tag"]
    assert json.loads(by_id[some]["tag"]) == tags and len(tags) > 1  # a repeated field: its values as JSON
    assert by_id[some]["size"] is None  # a column of another payload's field

    # The target loses history: a full dump (new generation) without 001 supersedes everything before.
    (directory / "r001.json").unlink()
    running.target.horizon_ms = 2**62
    wait_for(lambda: entries["file:///mail/001"].deleted)
    crawl("x:3")
    want = expected()
    rows = exported(run, "xesam_pmh", config.data_root, id="exp2")
    assert sorted(r["id"] for r in rows) == sorted(want) and "file:///mail/001" not in want
    assert {r["generation"] for r in rows} == {str(max(b["generation"] for b in want.values()))}
