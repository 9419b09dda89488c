"""Builders shared by the META-SHARE tests: LR storages from the fixture XML, a logged-in client,
and a scripted node (FakeServer) that serves whatever ZIP bodies a test hands it."""

from __future__ import annotations

import json
from pathlib import Path

import requests

from swath.platforms.metashare.client import MetashareClient
from swath.platforms.metashare.protocol import INVENTORY_JSON, SYNC_PROTOCOL, lr_checksum
from swath.platforms.metashare.safezip import write_zip
from swath.platforms.metashare.storage import LRStorage
from tests.fakes.httpserver import FakeServer, Request, Response

USERS = {"harvester": "pa ss&word=1%"}  # characters that form-encoding changes, to test redaction of both forms


def fixture_xml(fixtures_dir: Path) -> list[bytes]:
    return [path.read_bytes() for path in sorted((fixtures_dir / "metashare").glob("*.xml"))]


def node_storage(root: Path, documents: list[bytes], *, copies: int = 1) -> LRStorage:
    """An LR storage with `copies` master LRs per fixture document (made distinct by an XML comment)."""
    storage = LRStorage(root=root)
    for n in range(copies):
        for doc in documents:
            storage.add_master(doc + f"<!-- copy {n} -->".encode(), source_url="http://origin.example")
    return storage


def logged_in(base_url: str, **kwargs: object) -> MetashareClient:
    client = MetashareClient(session=requests.Session(), base_url=base_url, timeout=60, **kwargs)
    client.login("harvester", USERS["harvester"])
    return client


def zip_of(entries: list[tuple[str, bytes]]) -> bytes:
    return write_zip(entries)


def scripted_node(
    inventory: dict[str, str], bodies: dict[str, bytes], *, inventory_body: bytes | None = None
) -> FakeServer:
    """A node following the login protocol that serves `bodies[id]` as-is for /sync/<id>/metadata/."""
    server = FakeServer()

    @server.route("/login/", "GET")
    def login_form(req: Request) -> Response:
        return Response(200, b"<form></form>", {"Set-Cookie": "csrftoken=tok123; Path=/"}, "text/html")

    @server.route("/login/", "POST")
    def login(req: Request) -> Response:
        return Response(200, b"<a>Logout</a>", {"Set-Cookie": "sessionid=sess456; Path=/"}, "text/html")

    @server.route("/sync/")
    def listing(req: Request) -> Response:
        body = inventory_body or zip_of([(INVENTORY_JSON, json.dumps(inventory).encode())])
        return Response(200, body, {"Sync-Protocol": SYNC_PROTOCOL}, "application/zip")

    for identifier, body in bodies.items():
        server.routes[f"/sync/{identifier}/metadata/"] = (
            lambda req, body=body: Response(200, body, {}, "application/zip")
        )
    return server


def lr_zip(storage: LRStorage, identifier: str) -> tuple[str, bytes]:
    """(checksum, resource ZIP) of a stored LR, as an honest node would serve it."""
    lr = storage.get(identifier)
    assert lr is not None
    checksum = lr_checksum(lr.metadata_xml, lr.storage_json)
    return checksum, zip_of([("metadata.xml", lr.metadata_xml), ("storage-global.json", lr.storage_json)])


def files_under(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}
