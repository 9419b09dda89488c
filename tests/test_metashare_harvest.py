"""metashare_sync through the harvest engine: real node server on localhost, statuses, stats, WARC contents."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from urllib.parse import quote_plus

import pytest

from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.messages.validation import InvalidMessage
from swath.platforms.metashare.server import NodeServer
from swath.platforms.metashare.storage import LRStorage
from tests.enginekit import context, raw_bytes, read_records, warc_files
from tests.metasharekit import USERS, fixture_xml, lr_zip, node_storage, scripted_node, zip_of

ROUTING_KEY = "harvest.start.metashare.metashare_sync"


def start(url: str, *, password: str = USERS["harvester"], harvest_id: str = "ms:1") -> dict:
    return {
        "id": harvest_id,
        "type": "metashare_sync",
        "path": "collection",
        "seeds": [{"id": "node-1", "token": url}],
        "credentials": {"username": "harvester", "password": password},
        "collection_set": {"id": "set-1"},
        "collection": {"id": "coll-1"},
    }


def run(config, body: dict):
    ctx, published = context(config)
    run_harvest(body, routing_key=ROUTING_KEY, ctx=ctx)
    return published


def totals(status: dict) -> Counter:
    out: Counter = Counter()
    for per_day in status["stats"].values():
        out.update(per_day)
    return out


def lr_downloads(node: NodeServer) -> list[str]:
    return [e.path.split("/")[2] for e in node.requests_to("/sync/") if e.path.endswith("/metadata/")]


def test_first_sync_adds_all_and_the_warc_holds_every_exchange_redacted(config, data_root, tmp_path, fixtures_dir):
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    served = sorted(source.ids())
    with NodeServer(storage=source, users=USERS) as node:
        published = run(config, start(node.url))
        sessions = list(node._sessions)
    final = published.statuses[-1]
    assert final["status"] == "completed success", final["errors"]
    assert published.statuses[0]["status"] == "running" and len(published.warcs) == 1
    assert totals(final) == {"added": len(served), "updated": 0, "deleted": 0, "unchanged": 0, "rejected": 0}
    assert sorted(LRStorage(root=data_root / "collection" / "lr-storage").ids()) == served

    files = warc_files(data_root)
    records = read_records(files)
    logins = [json.loads(r[4]) for r in records if r[0] == "metadata"]
    assert [(x["request"]["method"], x["response"]["status"]) for x in logins] == [("GET", 200), ("POST", 200)]
    # the login name is kept out of the recorded login requests only: the node's answer keeps it (no secret)
    assert "username=REDACTED" in logins[1]["request"]["body"]
    assert "harvester" not in json.dumps([x["request"] for x in logins])
    assert "Welcome, harvester." in logins[1]["response"]["body"]
    responses = [r for r in records if r[0] == "response"]
    lr_uris = sorted(r[1].split("/")[4] for r in responses if r[1].endswith("/metadata/"))
    assert lr_uris == served
    assert sum(1 for r in responses if "/sync/?sync_protocol=1.0" in r[1]) == 1
    blob = raw_bytes(files)
    for secret in [USERS["harvester"], quote_plus(USERS["harvester"]), *sessions]:
        assert secret.encode() not in blob
    assert b"csrftoken=" not in blob.replace(b"csrftoken=REDACTED", b"")
    assert b"sessionid=" not in blob.replace(b"sessionid=REDACTED", b"")


def test_change_two_delete_one_add_one_downloads_exactly_four(config, data_root, tmp_path, fixtures_dir):
    documents = fixture_xml(fixtures_dir)
    source = node_storage(tmp_path / "node", documents)
    with NodeServer(storage=source, users=USERS) as node:
        assert run(config, start(node.url, harvest_id="ms:1")).statuses[-1]["status"] == "completed success"
        ids = sorted(source.ids())
        changed, deleted = ids[:2], ids[2]
        for identifier in changed:
            path = source.root / identifier / "metadata.xml"
            path.write_bytes(path.read_bytes() + b"<!-- edited -->")
        source.delete(deleted)
        added = source.add_master(documents[-1] + b"<!-- another -->", source_url=node.public_url)
        before = len(lr_downloads(node))
        final = run(config, start(node.url, harvest_id="ms:2")).statuses[-1]
        downloads = lr_downloads(node)[before:]
    assert sorted(downloads) == sorted([*changed, added])
    expected = {"added": 1, "updated": 2, "deleted": 1, "unchanged": len(documents) - 3, "rejected": 0}
    assert totals(final) == expected and final["status"] == "completed success"
    local = LRStorage(root=data_root / "collection" / "lr-storage")
    assert sorted(local.ids()) == sorted(source.ids())
    for identifier in changed:
        assert local.get(identifier).storage_json == source.get(identifier).storage_json


def test_tampered_lr_is_rejected_with_checksum_mismatch_and_the_rest_sync(config, data_root, tmp_path, fixtures_dir):
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    inventory, bodies = {}, {}
    for identifier in source.ids():
        inventory[identifier], bodies[identifier] = lr_zip(source, identifier)
    tampered = sorted(inventory)[-1]
    lr = source.get(tampered)
    bodies[tampered] = zip_of([("metadata.xml", lr.metadata_xml + b"<!-- injected -->"),
                               ("storage-global.json", lr.storage_json)])
    with scripted_node(inventory, bodies) as node:
        final = run(config, start(node.url)).statuses[-1]
    assert final["status"] == "completed success"
    assert [(w["code"], w["seed_id"]) for w in final["warnings"]] == [(codes.CHECKSUM_MISMATCH, "node-1")]
    assert tampered in final["warnings"][0]["message"]
    assert totals(final)["rejected"] == 1 and totals(final)["added"] == len(inventory) - 1
    stored = set(LRStorage(root=data_root / "collection" / "lr-storage").ids())
    assert stored == set(inventory) - {tampered}


def test_wrong_password_is_a_completed_failure_with_unauthorized(config, data_root, tmp_path, fixtures_dir):
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:2])
    with NodeServer(storage=source, users=USERS) as node:
        published = run(config, start(node.url, password="not-the-password"))
        posts = [e.status for e in node.requests_to("/login/") if e.method == "POST"]
        syncs = node.requests_to("/sync/")
    final = published.statuses[-1]
    assert final["status"] == "completed failure"
    assert [(e["code"], e.get("seed_id")) for e in final["errors"]] == [(codes.UNAUTHORIZED, "node-1")]
    assert posts == [403] and syncs == []
    assert not (data_root / "collection" / "lr-storage").exists()
    assert b"not-the-password" not in raw_bytes(warc_files(data_root))


def test_node_answering_501_is_a_completed_failure(config, data_root, tmp_path, fixtures_dir):
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:2])
    with NodeServer(storage=source, users=USERS, sync_protocols=("2.0",)) as node:
        # The engine retries 5xx with backoff; without retries the test stays fast and counts one request.
        published = run(dataclasses.replace(config, http_retries=0), start(node.url))
        statuses = [e.status for e in node.requests_to("/sync/")]
    final = published.statuses[-1]
    assert final["status"] == "completed failure" and statuses == [501]
    assert [e["code"] for e in final["errors"]] == [codes.SYNC_PROTOCOL_UNSUPPORTED]
    assert totals(final)["added"] == 0


def test_missing_credentials_or_bad_seed_are_refused(config, data_root):
    # refused with the message: the type declares an http(s) seed and the credentials it needs
    body = start("ftp://node.example")
    with pytest.raises(InvalidMessage, match=r"seeds\[0\]\.token"):
        run(config, body)
    body["credentials"] = {}
    with pytest.raises(InvalidMessage, match="needs username and password"):
        run(config, dict(body, id="ms:2"))
