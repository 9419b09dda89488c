"""The node server over real HTTP: login with CSRF, inventory and LR ZIPs, 403/501, storage-global.json format."""

from __future__ import annotations

import http.client
import io
import json
import socket
import zipfile
from pathlib import Path

import pytest
import requests

from swath.platforms.metashare.protocol import StorageGlobal, lr_checksum
from swath.platforms.metashare.server import NodeServer
from swath.platforms.metashare.storage import LRStorage
from tests.metasharekit import USERS, fixture_xml, node_storage


@pytest.fixture
def node(tmp_path: Path, fixtures_dir: Path):
    storage = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    with NodeServer(storage=storage, users=USERS) as server:
        yield server


def login(node: NodeServer, password: str = USERS["harvester"]) -> tuple[requests.Session, requests.Response]:
    session = requests.Session()
    form = session.get(f"{node.url}/login/", timeout=60)
    assert form.status_code == 200
    token = session.cookies.get("csrftoken")
    assert token and token in form.text
    reply = session.post(
        f"{node.url}/login/",
        data={"username": "harvester", "password": password, "this_is_the_login_form": "1",
              "csrfmiddlewaretoken": token},
        timeout=60,
    )
    return session, reply


def unzip(body: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(body)) as archive:
        return [(info.filename, archive.read(info)) for info in archive.infolist()]


def test_login_sets_sessionid_and_says_logout(node: NodeServer) -> None:
    session, reply = login(node)
    assert reply.status_code == 200
    assert session.cookies.get("sessionid")
    assert "Logout" in reply.text


def test_wrong_password_or_missing_csrf_is_403(node: NodeServer) -> None:
    session, reply = login(node, password="wrong")
    assert reply.status_code == 403
    assert session.cookies.get("sessionid") is None
    bare = requests.post(
        f"{node.url}/login/",
        data={"username": "harvester", "password": USERS["harvester"], "this_is_the_login_form": "1",
              "csrfmiddlewaretoken": "forged"},
        timeout=60,
    )
    assert bare.status_code == 403


def test_sync_needs_a_session_then_the_protocol_version(node: NodeServer) -> None:
    assert requests.get(f"{node.url}/sync/?sync_protocol=1.0", timeout=60).status_code == 403
    session, _ = login(node)
    assert session.get(f"{node.url}/sync/", timeout=60).status_code == 501
    assert session.get(f"{node.url}/sync/?sync_protocol=2.0", timeout=60).status_code == 501
    some_id = next(node.storage.ids())
    assert requests.get(f"{node.url}/sync/{some_id}/metadata/", timeout=60).status_code == 403


def test_inventory_lists_every_lr_with_its_checksum(node: NodeServer) -> None:
    session, _ = login(node)
    reply = session.get(f"{node.url}/sync/?sync_protocol=1.0", timeout=60)
    assert reply.status_code == 200
    assert reply.headers["Sync-Protocol"] == "1.0"
    assert "attachment" in reply.headers["Content-Disposition"]
    entries = unzip(reply.content)
    assert [name for name, _ in entries] == ["inventory.json"]
    inventory = json.loads(entries[0][1])
    expected = {}
    for identifier in node.storage.ids():
        lr = node.storage.get(identifier)
        expected[identifier] = lr_checksum(lr.metadata_xml, lr.storage_json)
    assert inventory == expected and len(inventory) == len(list(Path(node.storage.root).iterdir()))


def test_lr_zip_has_two_files_in_order_and_canonical_storage_json(node: NodeServer) -> None:
    session, _ = login(node)
    identifier = next(node.storage.ids())
    reply = session.get(f"{node.url}/sync/{identifier}/metadata/", timeout=60)
    assert reply.status_code == 200
    entries = unzip(reply.content)
    assert [name for name, _ in entries] == ["metadata.xml", "storage-global.json"]
    raw = entries[1][1]
    parsed = json.loads(raw, object_pairs_hook=list)
    keys = [key for key, _ in parsed]
    assert keys == sorted(keys) and len(keys) == 8
    assert raw == json.dumps(dict(parsed), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    assert dict(parsed)["identifier"] == identifier
    assert entries[0][1] == (node.storage.root / identifier / "metadata.xml").read_bytes()


def test_unknown_or_malformed_lr_id_is_404(node: NodeServer) -> None:
    session, _ = login(node)
    assert session.get(f"{node.url}/sync/{'0' * 64}/metadata/", timeout=60).status_code == 404
    assert session.get(f"{node.url}/sync/..%2F..%2Fetc/metadata/", timeout=60).status_code == 404


def test_edit_increments_revision_once(node: NodeServer) -> None:
    session, _ = login(node)
    identifier = next(node.storage.ids())
    before = StorageGlobal.from_json(node.storage.get(identifier).storage_json)
    inventory_url = f"{node.url}/sync/?sync_protocol=1.0"
    first = json.loads(unzip(session.get(inventory_url, timeout=60).content)[0][1])
    path = node.storage.root / identifier / "metadata.xml"
    path.write_bytes(path.read_bytes() + b"<!-- edited -->")
    second = json.loads(unzip(session.get(inventory_url, timeout=60).content)[0][1])
    third = json.loads(unzip(session.get(inventory_url, timeout=60).content)[0][1])
    after = StorageGlobal.from_json(node.storage.get(identifier).storage_json)
    assert after.revision == before.revision + 1
    assert after.created == before.created
    assert second[identifier] != first[identifier] and third == second
    assert {k: v for k, v in second.items() if k != identifier} == {k: v for k, v in first.items() if k != identifier}


def test_internal_lrs_are_not_served(tmp_path: Path, fixtures_dir: Path) -> None:
    storage = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:2])
    hidden = next(storage.ids())
    lr = storage.get(hidden)
    internal = StorageGlobal.from_json(lr.storage_json).__dict__ | {"publication_status": "i"}
    (storage.root / hidden / "storage-global.json").write_bytes(StorageGlobal(**internal).to_json())
    with NodeServer(storage=storage, users=USERS) as node:
        session, _ = login(node)
        inventory = json.loads(unzip(session.get(f"{node.url}/sync/?sync_protocol=1.0", timeout=60).content)[0][1])
        assert hidden not in inventory and len(inventory) == 1
        assert session.get(f"{node.url}/sync/{hidden}/metadata/", timeout=60).status_code == 404


def test_new_metadata_file_gets_a_first_revision(tmp_path: Path, fixtures_dir: Path) -> None:
    storage = LRStorage(root=tmp_path / "node")
    identifier = "ab" * 32
    (storage.root / identifier).mkdir(parents=True)
    (storage.root / identifier / "metadata.xml").write_bytes(fixture_xml(fixtures_dir)[0])
    with NodeServer(storage=storage, users=USERS, public_url="http://node.example/") as node:
        session, _ = login(node)
        reply = session.get(f"{node.url}/sync/{identifier}/metadata/", timeout=60)
        made = StorageGlobal.from_json(unzip(reply.content)[1][1])
    assert made.revision == 1 and made.identifier == identifier and made.source_url == "http://node.example"
    assert made.publication_status == "p" and made.deleted is False and made.created == made.modified


def test_oversized_or_garbled_request_bodies_are_refused(node: NodeServer) -> None:
    big = requests.post(f"{node.url}/login/", data=b"x" * (70 * 1024), timeout=60)
    host, port = node.httpd.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=60)
    connection.putrequest("POST", "/login/")
    connection.putheader("Content-Length", "-1")  # requests would correct it, so http.client sends it raw
    connection.endheaders()
    garbled = connection.getresponse()
    connection.close()
    assert big.status_code == 413
    assert garbled.status == 400
    assert [e.status for e in node.requests_to("/login/")] == [413, 400]


def test_what_the_node_keeps_per_request_is_bounded(tmp_path: Path, fixtures_dir: Path) -> None:
    # anyone reaching the port may ask for login forms for ever: tokens and the request log must not grow with it
    storage = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    with NodeServer(storage=storage, users=USERS, keep=5) as node:
        first = requests.Session()
        first.get(f"{node.url}/login/", timeout=60)
        for _ in range(20):
            requests.get(f"{node.url}/login/", timeout=60)
        _session, reply = login(node)  # the newest form still logs in
        stale = first.post(f"{node.url}/login/", timeout=60, data={
            "username": "harvester", "password": USERS["harvester"], "this_is_the_login_form": "1",
            "csrfmiddlewaretoken": first.cookies.get("csrftoken")})
        assert reply.status_code == 200 and stale.status_code == 403  # the oldest form's token was let go
        assert len(node._csrf_tokens) <= 5 and len(node.log) <= 5
        assert [e.status for e in node.requests_to("/login/")][-1] == 403


def test_a_connection_that_stops_sending_is_closed(tmp_path: Path, fixtures_dir: Path) -> None:
    # a half-sent request must not hold a thread of the node for ever (one per connection: a slow-loris)
    storage = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    with NodeServer(storage=storage, users=USERS, idle_timeout=1.0) as node:
        host, port = node.httpd.server_address[:2]
        with socket.create_connection((host, port), timeout=120) as conn:
            conn.sendall(b"GET /login/ HTTP/1.1\r\nHost: x\r\n")  # the headers never end
            assert conn.recv(1024) == b""  # the node hung up (a client timeout would raise instead)
