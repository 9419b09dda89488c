"""Hostile metadata sources and a tampered data root (issue #16): Kiel token folders and archives with planted
symlinks or DOCTYPEs, META-SHARE nodes that send DOCTYPEs, claim other nodes' LRs or nest their inventory
deeply, and a page that repeats a JSON key. Real servers on 127.0.0.1, real files and links in tmp dirs;
everything is judged from outside: the final status, what is on disk, and that nothing outside the data
root was read into it or written."""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

import orjson
import pytest

from swath.exporters.records import sources_for
from swath.exporters.warc_reader import Response as WarcResponse
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.platforms.kiel.redist import NestedRedist, escape_name
from swath.platforms.metashare.protocol import INVENTORY_JSON, lr_checksum
from swath.platforms.metashare.storage import LRStorage
from tests.enginekit import context
from tests.metasharekit import USERS, fixture_xml, lr_zip, node_storage, scripted_node, zip_of
from tests.reliability.kit import everything_written
from tests.test_export import Run, export, read_rows
from tests.test_export_behaviour import SEARCH, v2_page, v2_tweet, write_warc
from tests.test_kiel import TEXT_ID, amf, clock, setup_archive, site  # noqa: F401 - fixtures
from tests.test_kiel import harvest as kiel_harvest

pytestmark = pytest.mark.reliability

OUTSIDE_MARK = "OUTSIDE-THE-DATA-ROOT-7f3a"  # written only outside the data root: must never be found inside
FINAL = ("completed success", "completed failure")


def snapshot(folder: Path) -> dict[str, tuple[bool, bytes]]:
    """Every entry below `folder` with its bytes (links as their target): to prove nothing was written there."""
    out: dict[str, tuple[bool, bytes]] = {}
    for path in sorted(folder.rglob("*")):
        rel = str(path.relative_to(folder))
        if path.is_symlink():
            out[rel] = (True, os.readlink(path).encode())
        elif path.is_file():
            out[rel] = (False, path.read_bytes())
        else:
            out[rel] = (False, b"<dir>")
    return out


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A sentinel folder beside the data root holding one file with OUTSIDE_MARK."""
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "sentinel.txt").write_text(f"{OUTSIDE_MARK}\n")
    return folder


def found_inside(data_root: Path, marker: str) -> list[str]:
    return [str(path) for path, data in everything_written(data_root) if marker.encode() in data]


def one_final(published) -> dict:
    finals = [s for s in published.statuses if s["status"] in FINAL]
    assert len(finals) == 1, [s["status"] for s in published.statuses]
    return finals[0]


# ---------- Kiel: symlinks ----------

def test_kiel_symlinked_amf_files_leading_out_are_not_read(config, data_root, site, clock, outside):
    setup_archive(data_root, amf(site.url))
    secret_record = amf(site.url, title=OUTSIDE_MARK).replace(TEXT_ID, "RePEc:out:side:1")
    (outside / "secret.xml").write_text(secret_record)
    (outside / "deeper").mkdir()
    (outside / "deeper" / "more.xml").write_text(secret_record.replace("side:1", "side:2"))
    os.symlink(outside / "secret.xml", data_root / "src" / "evil.xml")
    os.symlink(outside / "deeper", data_root / "src" / "linked-folder")
    before = snapshot(outside)

    final = kiel_harvest(config, harvest_id="k-links")

    assert final["status"] == "completed success", final["errors"]
    warned = [(w["code"], w["message"].split(":")[0]) for w in final["warnings"]]
    assert (codes.PATH_OUTSIDE_DATA_ROOT, "evil.xml") in warned
    assert not found_inside(data_root, OUTSIDE_MARK)  # not in the archive, not in the WARC
    records = data_root / "archive" / "records"
    assert (records / NestedRedist().directory(TEXT_ID)).is_dir()  # the honest file's records were kept
    assert not (records / NestedRedist().directory("RePEc:out:side:1")).exists()
    assert snapshot(outside) == before


@pytest.mark.parametrize("planted", ["records", "record_folder", "objects", "tistbase_file", "temp_file",
                                     "object_tistbase"])
def test_kiel_never_writes_through_a_planted_link(config, data_root, site, clock, outside, planted):
    setup_archive(data_root, amf(site.url))
    record = data_root / "archive" / "records" / NestedRedist().directory(TEXT_ID)
    link_at = {
        "records": data_root / "archive" / "records",
        "record_folder": record,
        "objects": record / "objects",
        "tistbase_file": record / "00tistbase",
        "temp_file": record / ".00tistbase.tmp",  # the name the temp file of a rewrite had before
        "object_tistbase": record / "objects" / escape_name(f"{site.url}/page") / "00tistbase",  # appended to
    }[planted]
    link_at.parent.mkdir(parents=True, exist_ok=True)
    target = outside / "sentinel.txt" if planted.endswith("_file") or planted == "object_tistbase" else outside
    os.symlink(target, link_at)
    before = snapshot(outside)

    final = kiel_harvest(config, harvest_id=f"k-{planted}")

    assert final["status"] == "completed success", final["errors"]
    assert snapshot(outside) == before, "a file outside the data root was written"
    if planted == "tistbase_file":  # a link in a file's place is replaced, never written through
        assert not link_at.is_symlink() and link_at.read_text().strip().isdigit()
    elif planted == "temp_file":  # temp files get fresh names, created exclusively
        assert (record / "00tistbase").read_text().strip().isdigit()
    else:
        refused = [w for w in final["warnings"] if w["code"] == codes.PATH_OUTSIDE_DATA_ROOT]
        assert refused and all("symlink" in w["message"] for w in refused)
        assert TEXT_ID in " ".join(w["message"] for w in refused)


def test_kiel_etc_link_out_fails_the_harvest_without_writing(config, data_root, site, clock, outside):
    setup_archive(data_root, amf(site.url))
    (data_root / "archive").mkdir()
    os.symlink(outside, data_root / "archive" / "etc")
    before = snapshot(outside)
    final = kiel_harvest(config, harvest_id="k-etc")
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT]
    assert snapshot(outside) == before


# ---------- Kiel: DOCTYPE ----------

def test_kiel_record_with_a_doctype_is_refused_and_the_others_kept(config, data_root, site, clock):
    setup_archive(data_root, amf(site.url))
    entity = "ENTITY-VALUE-c41d"
    hostile = (amf(site.url).replace(TEXT_ID, "RePEc:dtd:doc:1").replace("RePEc:per:1", "RePEc:per:dtd")
               .replace('<amf xmlns', f'<!DOCTYPE amf [<!ENTITY x "{entity}">]>\n<amf xmlns')
               .replace("<title>One", "<title>&x;One"))
    (data_root / "src" / "hostile.xml").write_text(hostile)

    final = kiel_harvest(config, harvest_id="k-dtd")

    assert final["status"] == "completed success", final["errors"]
    assert [(w["code"], w["message"].split(":")[0]) for w in final["warnings"]
            if w["code"] == codes.KIEL_BAD_RECORD] == [(codes.KIEL_BAD_RECORD, "hostile.xml")]
    assert "DOCTYPE" in next(w["message"] for w in final["warnings"] if w["code"] == codes.KIEL_BAD_RECORD)
    records = data_root / "archive" / "records"
    assert list((records / NestedRedist().directory(TEXT_ID)).glob("*.amf.xml"))
    assert not (records / NestedRedist().directory("RePEc:dtd:doc:1")).exists()
    assert not found_inside(data_root / "archive" / "records", entity)


# ---------- META-SHARE ----------

def ms_start(urls: list[str], harvest_id: str, path: str = "collections/cs-1/c-1") -> dict:
    return {"id": harvest_id, "type": "metashare_sync", "path": path,
            "seeds": [{"id": f"node-{n}", "token": url} for n, url in enumerate(urls, 1)],
            "credentials": {"username": "harvester", "password": USERS["harvester"]},
            "collection_set": {"id": "cs-1"}, "collection": {"id": "c-1"}}


def ms_run(config, body: dict):
    ctx, published = context(config)
    run_harvest(body, routing_key="harvest.start.metashare.metashare_sync", ctx=ctx)
    return published


def served(storage: LRStorage) -> tuple[dict[str, str], dict[str, bytes]]:
    inventory, bodies = {}, {}
    for identifier in storage.ids():
        inventory[identifier], bodies[identifier] = lr_zip(storage, identifier)
    return inventory, bodies


def lr_storage(data_root: Path) -> LRStorage:
    return LRStorage(root=data_root / "collections" / "cs-1" / "c-1" / "lr-storage")


def totals(status: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for day in status["stats"].values():
        for k, v in day.items():
            out[k] = out.get(k, 0) + v
    return out


def test_metashare_lr_with_a_doctype_is_refused_at_intake_and_the_export_matches(config, data_root, tmp_path,
                                                                                   fixtures_dir):
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    inventory, bodies = served(source)
    hostile = sorted(inventory)[0]
    lr = source.get(hostile)
    xml = lr.metadata_xml.replace(b"<resourceInfo", b'<!DOCTYPE resourceInfo [<!ENTITY e "x">]>\n<resourceInfo', 1)
    assert xml != lr.metadata_xml
    inventory[hostile] = lr_checksum(xml, lr.storage_json)  # the node's checksum is honest: only the XML is hostile
    bodies[hostile] = zip_of([("metadata.xml", xml), ("storage-global.json", lr.storage_json)])
    with scripted_node(inventory, bodies) as node:
        final = one_final(ms_run(config, ms_start([node.url], "ms-dtd")))

    assert final["status"] == "completed success", final["errors"]
    assert [(w["code"], hostile in w["message"], "DOCTYPE" in w["message"]) for w in final["warnings"]] == \
        [(codes.INVALID_LR, True, True)]
    assert totals(final)["added"] == len(inventory) - 1 and totals(final)["rejected"] == 1
    stored = sorted(lr_storage(data_root).ids())
    assert stored == sorted(set(inventory) - {hostile})
    status = Run(config)(export("metashare_sync", "c-1", path="exports/ms"))
    assert status["status"] == "completed success", status["errors"]
    assert sorted(r["id"] for r in read_rows(Path(status["files"][0]))) == stored  # every `added` LR exported


def test_metashare_node_cannot_take_over_another_nodes_lr(config, data_root, tmp_path, fixtures_dir):
    documents = fixture_xml(fixtures_dir)
    honest_inventory, honest_bodies = served(node_storage(tmp_path / "a", documents[:2]))
    claimed = sorted(honest_inventory)[0]
    # The other node serves its own LR under the same id (a valid LR with the right checksum for its bytes).
    rogue_store = node_storage(tmp_path / "b", documents[2:3])
    own = next(iter(rogue_store.ids()))
    rogue_lr = rogue_store.get(own)
    storage_json = rogue_lr.storage_json.replace(own.encode(), claimed.encode())
    rogue_xml = rogue_lr.metadata_xml + b"<!-- rogue copy -->"
    rogue_inventory = {claimed: lr_checksum(rogue_xml, storage_json)}
    rogue_bodies = {claimed: zip_of([("metadata.xml", rogue_xml), ("storage-global.json", storage_json)])}

    honest_node = scripted_node(honest_inventory, honest_bodies)
    with honest_node as honest, scripted_node(rogue_inventory, rogue_bodies) as rogue:
        final = one_final(ms_run(config, ms_start([honest.url, rogue.url], "ms-own-1")))
        assert final["status"] == "completed success", final["errors"]
        assert [(w["code"], w["seed_id"]) for w in final["warnings"]] == [(codes.LR_OTHER_NODE, "node-2")]
        assert claimed in final["warnings"][0]["message"]
        assert rogue.requests_to(f"/sync/{claimed}/") == []  # refused before it was downloaded
        kept = lr_storage(data_root).get(claimed)
        assert kept is not None and kept.checksum == honest_inventory[claimed]

        rogue_inventory.clear()  # the rogue node's next sync lists nothing: it must not delete the honest LR
        final = one_final(ms_run(config, ms_start([rogue.url], "ms-own-2")))
        assert final["status"] == "completed success" and totals(final)["deleted"] == 0
        kept = lr_storage(data_root).get(claimed)
        assert kept is not None and kept.checksum == honest_inventory[claimed]
        again = one_final(ms_run(config, ms_start([honest.url], "ms-own-3")))
    assert totals(again)["unchanged"] == len(honest_inventory) and not again["warnings"]


def test_metashare_deeply_nested_inventory_is_a_bad_response(config, data_root):
    depth = 200_000
    nested = b'{"a":' + b"[" * depth + b"]" * depth + b"}"
    body = zip_of([(INVENTORY_JSON, nested)])
    with scripted_node({}, {}, inventory_body=body) as node:
        final = one_final(ms_run(config, ms_start([node.url], "ms-deep")))
    assert final["status"] == "completed failure"
    assert [(e["code"], e["seed_id"]) for e in final["errors"]] == [(codes.BAD_RESPONSE, "node-1")]
    assert "nested" in final["errors"][0]["message"] and "Recursion" not in final["errors"][0]["message"]


@pytest.mark.parametrize("planted", ["lr_folder", "lr_storage"])
def test_metashare_storage_is_never_written_through_a_planted_link(config, data_root, tmp_path, fixtures_dir,
                                                                    outside, planted):
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    inventory, bodies = served(source)
    victim = sorted(inventory)[0]
    root = lr_storage(data_root).root
    root.mkdir(parents=True)
    if planted == "lr_folder":
        os.symlink(outside, root / victim)
    else:
        root.rmdir()
        os.symlink(outside, root)
    before = snapshot(outside)
    with scripted_node(inventory, bodies) as node:
        final = one_final(ms_run(config, ms_start([node.url], f"ms-{planted}")))
    assert snapshot(outside) == before, "an LR was written outside the data root"
    if planted == "lr_folder":
        assert final["status"] == "completed success", final["errors"]
        assert [(w["code"], victim in w["message"]) for w in final["warnings"]] == \
            [(codes.PATH_OUTSIDE_DATA_ROOT, True)]
        assert sorted(lr_storage(data_root).ids()) == sorted(set(inventory) - {victim})
    else:
        assert final["status"] == "completed failure"
        assert [e["code"] for e in final["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT]


def test_metashare_userinfo_in_the_seed_is_not_stored_as_the_lr_owner(config, data_root, tmp_path, fixtures_dir):
    secret = "seed-userinfo-pw-93c1"
    inventory, bodies = served(node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:2]))
    with scripted_node(inventory, bodies) as node:
        url = node.url.replace("://", f"://sync:{secret}@")
        final = one_final(ms_run(config, ms_start([url], "ms-userinfo")))
    assert final["status"] == "completed success", final["errors"]
    storage = lr_storage(data_root)
    assert sorted(storage.ids()) == sorted(inventory)
    assert {storage.get(i).local.source_node for i in inventory} == {node.url}
    assert not found_inside(storage.root, secret)


def test_dataset_export_columns_carry_no_seed_userinfo():
    secret = "ckan-userinfo-pw-5e0b"
    record = {"id": "ds-1", "status": "active", "dataset": {"title": "T", "extras": {"uri": "https://d.example/1"}},
              "harvest": {"backend": "ckan", "source_id": "src", "domain": "d.example", "last_update": "2026-01-02",
                          "source_url": f"https://harvester:{secret}@d.example/api/3?api_key={secret}"}}
    resp = WarcResponse(url="urn:swath:dataset:ckan:src:ds-1", date=dt.datetime(2026, 1, 2, tzinfo=dt.UTC),
                        body=orjson.dumps(record), warc="x.warc.gz", offset=0, item_type="dataset")
    source = next(s for s in sources_for("ckan", {}) if s.reads(resp))
    rows = [dict(zip(source.table.headers, source.table.row(item)))
            for item in source.items(resp, want_raw=False, on_bad=lambda n: None)]
    assert [r["source_url"].split("?")[0] for r in rows] == ["https://d.example/api/3"]
    assert secret not in json.dumps(rows)


# ---------- exports: a repeated JSON key ----------

def test_json_full_export_of_pages_repeating_a_key_succeeds_with_the_last_values(config, data_root):
    tweets = [v2_tweet(i, "7", "2023-01-01T00:00:00.000Z", text=f"t{i}") for i in range(1, 4)]
    later = [v2_tweet(9, "8", "2023-01-02T00:00:00.000Z", text="later")]
    page = v2_page(tweets)
    # `data` twice at the top (spaced, so the later list's bytes differ from any re-serialised form), and a
    # tweet repeating `text` inside.
    outer = page[:-1] + b', "data": [' + json.dumps(later[0]).encode() + b"]}"
    inner = page.replace(b'"text":"t2"', b'"text":"first","text":"t2"', 1)
    coll = data_root / "collections" / "s" / "dup"
    write_warc(coll / "outer.warc.gz", [(SEARCH, "2023-02-02T00:00:00Z", outer)])
    write_warc(coll / "inner.warc.gz", [(SEARCH, "2023-02-02T00:00:00Z", inner)])
    run = Run(config)

    status = run(export("twitter_search_2", "dup", format="json_full", path="exports/dup"))

    assert status["status"] == "completed success", status["errors"]
    lines = Path(status["files"][0]).read_bytes().splitlines()
    expected = [t for body in (outer, inner) for t in orjson.loads(body)["data"]]  # as a JSON parser reads them
    bare = [{k: v for k, v in orjson.loads(line).items() if k not in ("author", "__twarc")} for line in lines]
    assert sorted(bare, key=orjson.dumps) == sorted(expected, key=orjson.dumps)  # flattened: author inlined
    assert all(line.count(b'"text"') == 1 for line in lines)
    noted = sorted((Path(w["message"].split(":")[0]).name, w["message"].split(": ")[1].split(" ")[0])
                   for w in status["warnings"] if w["code"] == codes.DUPLICATE_JSON_KEYS)
    assert noted == [("inner.warc.gz", "1"), ("outer.warc.gz", "1")]
    csv_status = run(export("twitter_search_2", "dup", format="csv", path="exports/dup", id="csv1"))
    assert csv_status["status"] == "completed success"
    assert len(read_rows(Path(csv_status["files"][0]))) == len(expected)


def test_sentinel_hash_helper_sees_changes(outside):
    """The snapshot the link tests rely on notices a write outside (the control for their assertions)."""
    before = snapshot(outside)
    (outside / "sentinel.txt").write_text("changed")
    assert snapshot(outside) != before
