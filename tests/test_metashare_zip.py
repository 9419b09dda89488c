"""Hostile ZIPs: each is refused with its code before anything is stored, and the other LRs still sync."""

from __future__ import annotations

from pathlib import Path

import pytest

from swath.messages import codes
from swath.platforms.metashare.client import sync
from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.safezip import read_zip
from swath.platforms.metashare.storage import LRStorage
from tests.metasharekit import (
    files_under,
    fixture_xml,
    logged_in,
    lr_zip,
    node_storage,
    scripted_node,
    zip_of,
)

LR = ("metadata.xml", "storage-global.json")
LIMIT = 256 * 1024


def hostile_bodies(metadata: bytes, storage_json: bytes) -> dict[str, tuple[bytes, str]]:
    """name -> (ZIP body carrying this LR's true files plus the attack, expected refusal code)."""
    return {
        "zip_slip": (zip_of([("../../x", b"owned"), ("metadata.xml", metadata), ("storage-global.json", storage_json)]),
                     codes.ZIP_UNSAFE_NAME),
        "absolute": (zip_of([("/tmp/x", b"owned"), ("metadata.xml", metadata), ("storage-global.json", storage_json)]),
                     codes.ZIP_UNSAFE_NAME),
        "bomb": (zip_of([("metadata.xml", metadata + b" " * (LIMIT * 8)), ("storage-global.json", storage_json)]),
                 codes.ZIP_TOO_LARGE),
        "extra": (zip_of([("metadata.xml", metadata), ("storage-global.json", storage_json), ("x", b"extra")]),
                  codes.ZIP_UNEXPECTED_ENTRIES),
        "missing": (zip_of([("metadata.xml", metadata)]), codes.ZIP_UNEXPECTED_ENTRIES),
        "swapped": (zip_of([("storage-global.json", storage_json), ("metadata.xml", metadata)]),
                    codes.ZIP_UNEXPECTED_ENTRIES),
        "not_zip": (b"<html><body>Server Error</body></html>", codes.BAD_ZIP),
        "truncated": (zip_of([("metadata.xml", metadata), ("storage-global.json", storage_json)])[:-40], codes.BAD_ZIP),
    }


def test_hostile_lr_zips_are_refused_and_the_rest_sync(tmp_path: Path, fixtures_dir: Path) -> None:
    documents = fixture_xml(fixtures_dir)
    source = node_storage(tmp_path / "node", documents, copies=2)
    ids = list(source.ids())
    probe = source.get(ids[0])
    attacks = hostile_bodies(probe.metadata_xml, probe.storage_json)
    assert len(ids) > len(attacks), "need at least one honest LR beside the hostile ones"
    inventory: dict[str, str] = {}
    bodies: dict[str, bytes] = {}
    expected_code: dict[str, str] = {}
    for identifier, (name, (_probe_body, code)) in zip(ids, attacks.items()):  # each LR gets its own body below
        lr = source.get(identifier)
        inventory[identifier], _ = lr_zip(source, identifier)
        bodies[identifier] = hostile_bodies(lr.metadata_xml, lr.storage_json)[name][0]
        expected_code[identifier] = code
    honest = ids[len(attacks):]
    for identifier in honest:
        inventory[identifier], bodies[identifier] = lr_zip(source, identifier)

    client_root = tmp_path / "data" / "collection" / "lr-storage"
    client_root.mkdir(parents=True)
    before = files_under(tmp_path)
    with scripted_node(inventory, bodies) as node:
        outcomes = list(sync(logged_in(node.url, max_zip_bytes=LIMIT), LRStorage(root=client_root)))

    rejected = {o.identifier: o.code for o in outcomes if o.result == "rejected"}
    assert rejected == expected_code
    assert all(o.message for o in outcomes if o.result == "rejected")
    assert sorted(o.identifier for o in outcomes if o.result == "added") == sorted(honest)
    assert sorted(LRStorage(root=client_root).ids()) == sorted(honest)
    new_outside = {p for p in files_under(tmp_path) - before if client_root not in p.parents}
    assert new_outside == set(), f"written outside the LR storage: {new_outside}"
    assert not [p for p in tmp_path.rglob("x")], "a ZIP entry named x reached the disk"


def test_hostile_inventory_fails_the_sync_with_its_code(tmp_path: Path) -> None:
    slip = zip_of([("../inventory.json", b"{}")])
    with scripted_node({}, {}, inventory_body=slip) as node:
        with pytest.raises(MetashareError) as caught:
            list(sync(logged_in(node.url), LRStorage(root=tmp_path / "lrs")))
    assert caught.value.code == codes.ZIP_UNSAFE_NAME
    assert not (tmp_path / "lrs").exists()


def test_bad_inventory_entries_are_rejected_one_by_one(tmp_path: Path, fixtures_dir: Path) -> None:
    source = node_storage(tmp_path / "node", fixture_xml(fixtures_dir)[:1])
    good = next(source.ids())
    checksum, body = lr_zip(source, good)
    inventory = {good: checksum, "../../etc": checksum, "A" * 64: checksum, "cd" * 32: "not-an-md5"}
    with scripted_node(inventory, {good: body}) as node:
        outcomes = list(sync(logged_in(node.url), LRStorage(root=tmp_path / "lrs")))
        fetched = [r.path for r in node.requests if r.path.endswith("/metadata/")]
    assert [o.result for o in outcomes if o.identifier == good] == ["added"]
    assert sorted(o.code for o in outcomes if o.result == "rejected") == [codes.BAD_INVENTORY_ENTRY] * 3
    assert fetched == [f"/sync/{good}/metadata/"]


def test_lying_sizes_are_caught_while_inflating() -> None:
    # An entry whose header claims a small size is still counted as it inflates.
    body = bytearray(zip_of([("metadata.xml", b"a" * 100_000), ("storage-global.json", b"{}")]))
    for signature, size_offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = body.find(signature)
        body[at + size_offset: at + size_offset + 4] = (10).to_bytes(4, "little")
    with pytest.raises(MetashareError) as caught:
        read_zip(bytes(body), expected=LR, max_bytes=1000, what="LR ZIP")
    assert caught.value.code in (codes.ZIP_TOO_LARGE, codes.BAD_ZIP)


@pytest.mark.parametrize("name", ["..", "a/../../b", "C:evil", "dir\\..\\x", "", "/abs"])
def test_unsafe_names(name: str) -> None:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("metadata.xml"), b"<a/>")
        info = zipfile.ZipInfo("placeholder")
        info.filename = name  # bypass ZipInfo's own clean-up so the raw name reaches the archive
        archive.writestr(info, b"x")
    with pytest.raises(MetashareError) as caught:
        read_zip(buffer.getvalue(), expected=LR, max_bytes=LIMIT, what="LR ZIP")
    assert caught.value.code in (codes.ZIP_UNSAFE_NAME, codes.BAD_ZIP)
