"""The protocol client and sync against the real node server over HTTP on localhost (plain requests.Session)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import requests

from swath.messages import codes
from swath.platforms.metashare.client import MetashareClient, sync
from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.server import NodeServer
from swath.platforms.metashare.storage import REMOTE, LRStorage
from tests.metasharekit import USERS, fixture_xml, logged_in, lr_zip, node_storage, scripted_node, zip_of


def lr_downloads(node: NodeServer) -> list[str]:
    return [entry.path.split("/")[2] for entry in node.requests_to("/sync/") if entry.path.endswith("/metadata/")]


def test_first_sync_adds_all_then_nothing_changes(tmp_path: Path, fixtures_dir: Path) -> None:
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    local = LRStorage(root=tmp_path / "client")
    with NodeServer(storage=source, users=USERS) as node:
        first = Counter(o.result for o in sync(logged_in(node.url), local))
        downloads_first = len(lr_downloads(node))
        second = Counter(o.result for o in sync(logged_in(node.url), local))
        downloads_second = len(lr_downloads(node)) - downloads_first
    served = sorted(source.ids())
    assert first == {"added": len(served)} and downloads_first == len(served)
    assert second == {"unchanged": len(served)} and downloads_second == 0
    assert sorted(local.ids()) == served
    for identifier in served:
        theirs, ours = source.get(identifier), local.get(identifier)
        assert (ours.metadata_xml, ours.storage_json) == (theirs.metadata_xml, theirs.storage_json)
        assert ours.local.copy_status == REMOTE and ours.local.source_node == node.url


def test_change_two_delete_one_add_one(tmp_path: Path, fixtures_dir: Path) -> None:
    documents = fixture_xml(fixtures_dir)
    source = node_storage(tmp_path / "node", documents)
    local = LRStorage(root=tmp_path / "client")
    with NodeServer(storage=source, users=USERS) as node:
        list(sync(logged_in(node.url), local))
        changed, deleted = sorted(source.ids())[:2], sorted(source.ids())[2]
        for identifier in changed:
            path = source.root / identifier / "metadata.xml"
            path.write_bytes(path.read_bytes() + b"<!-- changed -->")
        source.delete(deleted)
        added = source.add_master(documents[0] + b"<!-- new -->", source_url=node.url)
        before = len(lr_downloads(node))
        outcomes = list(sync(logged_in(node.url), local))
        downloads = lr_downloads(node)[before:]
    by_result: dict[str, set[str]] = {}
    for outcome in outcomes:
        by_result.setdefault(outcome.result, set()).add(outcome.identifier)
    assert sorted(downloads) == sorted([*changed, added])
    assert by_result["updated"] == set(changed)
    assert by_result["added"] == {added}
    assert by_result["deleted"] == {deleted}
    assert len(by_result["unchanged"]) == len(documents) - 3
    assert sorted(local.ids()) == sorted(source.ids())
    assert b"<!-- changed -->" in local.get(changed[0]).metadata_xml


def test_only_lrs_from_this_node_are_deleted(tmp_path: Path, fixtures_dir: Path) -> None:
    documents = fixture_xml(fixtures_dir)
    local = LRStorage(root=tmp_path / "client")
    mine = local.add_master(documents[0], source_url="http://here.example")
    source = node_storage(tmp_path / "node", documents[:2])
    with NodeServer(storage=source, users=USERS) as node:
        list(sync(logged_in(node.url), local))
        for identifier in list(source.ids()):
            source.delete(identifier)
        results = Counter(o.result for o in sync(logged_in(node.url), local))
    assert results == {"deleted": 2}
    assert list(local.ids()) == [mine]


def test_tampered_lr_is_rejected_and_the_others_sync(tmp_path: Path, fixtures_dir: Path) -> None:
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    inventory, bodies = {}, {}
    for identifier in source.ids():
        inventory[identifier], bodies[identifier] = lr_zip(source, identifier)
    tampered = sorted(inventory)[1]
    lr = source.get(tampered)
    bodies[tampered] = zip_of(
        [("metadata.xml", lr.metadata_xml.replace(b"<", b"< ", 1) + b"<!-- x -->"),
         ("storage-global.json", lr.storage_json)]
    )
    local = LRStorage(root=tmp_path / "client")
    with scripted_node(inventory, bodies) as node:
        outcomes = list(sync(logged_in(node.url), local))
    rejected = [o for o in outcomes if o.result == "rejected"]
    assert [(o.identifier, o.code) for o in rejected] == [(tampered, codes.CHECKSUM_MISMATCH)]
    assert inventory[tampered] in rejected[0].message
    assert sorted(local.ids()) == sorted(set(inventory) - {tampered})


def test_wrong_password_is_unauthorized(tmp_path: Path, fixtures_dir: Path) -> None:
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:1])
    with NodeServer(storage=source, users=USERS) as node:
        client = MetashareClient(session=requests.Session(), base_url=node.url, timeout=60)
        with pytest.raises(MetashareError) as caught:
            client.login("harvester", "wrong password")
        posts = [e.status for e in node.requests_to("/login/") if e.method == "POST"]
    assert caught.value.code == codes.UNAUTHORIZED
    assert "wrong password" not in str(caught.value)
    assert posts == [403]


def test_node_without_protocol_1_0_is_501(tmp_path: Path, fixtures_dir: Path) -> None:
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:1])
    local = LRStorage(root=tmp_path / "client")
    with NodeServer(storage=source, users=USERS, sync_protocols=("1.1",)) as node:
        with pytest.raises(MetashareError) as caught:
            list(sync(logged_in(node.url), local))
        statuses = [e.status for e in node.requests_to("/sync/")]
    assert caught.value.code == codes.SYNC_PROTOCOL_UNSUPPORTED
    assert statuses == [501]
    assert list(local.ids()) == []


def test_a_harvested_collection_can_be_harvested_again(tmp_path: Path, fixtures_dir: Path) -> None:
    origin = node_storage(tmp_path / "origin", fixture_xml(fixtures_dir))
    middle = LRStorage(root=tmp_path / "middle")
    last = LRStorage(root=tmp_path / "last")
    with NodeServer(storage=origin, users=USERS) as first:
        list(sync(logged_in(first.url), middle))
    with NodeServer(storage=middle, users=USERS) as second:
        results = Counter(o.result for o in sync(logged_in(second.url), last))
    assert results == {"added": len(list(origin.ids()))}
    for identifier in origin.ids():
        # Byte-identical: same checksum everywhere, source_url still the origin's, revision not bumped.
        assert last.get(identifier).storage_json == origin.get(identifier).storage_json
        assert last.get(identifier).metadata_xml == origin.get(identifier).metadata_xml
        assert last.get(identifier).local.source_node == second.url


def test_a_damaged_local_copy_is_fetched_again(tmp_path: Path, fixtures_dir: Path) -> None:
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:3])
    local = LRStorage(root=tmp_path / "client")
    with NodeServer(storage=source, users=USERS) as node:
        list(sync(logged_in(node.url), local))
        first, second = sorted(local.ids())[:2]
        (local.root / first / "metadata.xml").write_bytes(b"\xff\xfe not utf-8")
        (local.root / second / "storage-global.json").write_bytes(b"{}")
        before = len(lr_downloads(node))
        results = {o.identifier: o.result for o in sync(logged_in(node.url), local)}
        again = lr_downloads(node)[before:]
    assert sorted(again) == sorted([first, second])
    assert results[first] == results[second] == "updated"
    assert local.get(first).metadata_xml == source.get(first).metadata_xml
