"""LR storage on disk: one directory per LR storage id, shared by the sync client and the node server.

    <root>/<storage id>/metadata.xml          the LR as served
    <root>/<storage id>/storage-global.json   the eight global members, byte for byte as served
    <root>/<storage id>/storage-local.json    this copy's bookkeeping: where it came from, MD5 of metadata.xml

Every file is written to a temp name and renamed, so a reader sees an old or a new LR, never half of one.
LR folders and files are never symlinks: one planted there is not read, followed or written through.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from swath.core.paths import PathOutsideDataRoot, write_atomic
from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.protocol import (
    METADATA_XML,
    STORAGE_GLOBAL_JSON,
    StorageGlobal,
    format_date,
    is_storage_id,
    lr_checksum,
    new_storage_id,
)

STORAGE_LOCAL_JSON = "storage-local.json"
MASTER, REMOTE = "m", "r"  # META-SHARE's copy status: created on this node, or harvested from another
DEFAULT_METASHARE_VERSION = "3.0"


@dataclass(frozen=True, kw_only=True)
class StorageLocal:
    copy_status: str  # MASTER or REMOTE
    source_node: str  # base URL this copy was harvested from ("" for a master copy)
    metadata_md5: str  # MD5 of metadata.xml when storage-global.json was last written (detects edits)


@dataclass(frozen=True, kw_only=True)
class StoredLR:
    identifier: str
    metadata_xml: bytes
    storage_json: bytes
    local: StorageLocal | None

    @property
    def checksum(self) -> str:
        return lr_checksum(self.metadata_xml, self.storage_json)


class LRStorage:
    """The LRs under `root`; storage ids are checked before they become path parts."""

    def __init__(self, *, root: Path) -> None:
        self.root = Path(root)

    def _dir(self, identifier: str) -> Path:
        if not is_storage_id(identifier):
            raise ValueError(f"not an LR storage id: {identifier!r}")
        return self.root / identifier

    def ids(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for entry in sorted(os.scandir(self.root), key=lambda e: e.name):
            if is_storage_id(entry.name) and entry.is_dir(follow_symlinks=False):
                metadata = os.path.join(entry.path, METADATA_XML)
                if os.path.isfile(metadata) and not os.path.islink(metadata):
                    yield entry.name

    def get(self, identifier: str) -> StoredLR | None:
        """The stored LR, or None if absent (a symlinked folder or metadata.xml counts as absent)."""
        folder = self._dir(identifier)
        if folder.is_symlink():
            return None
        metadata = _read_or_none(folder / METADATA_XML)
        if metadata is None:
            return None
        storage_json = _read_or_none(folder / STORAGE_GLOBAL_JSON) or b""
        raw_local = _read_or_none(folder / STORAGE_LOCAL_JSON)
        try:
            local = StorageLocal(**json.loads(raw_local)) if raw_local else None
        except (ValueError, TypeError):  # a damaged bookkeeping file: treat the copy as one we never saw
            local = None
        return StoredLR(identifier=identifier, metadata_xml=metadata, storage_json=storage_json, local=local)

    def put(self, *, identifier: str, metadata_xml: bytes, storage_json: bytes, local: StorageLocal) -> None:
        """Store an LR; raises PathOutsideDataRoot if its folder is a symlink (planted: never written through)."""
        folder = self._dir(identifier)
        folder.mkdir(parents=True, exist_ok=True)
        if folder.is_symlink():
            raise PathOutsideDataRoot(f"LR {identifier}: {str(folder)!r} is a symlink; LR folders never are, "
                                      "so nothing was written through it")
        write_atomic(folder / METADATA_XML, metadata_xml)
        write_atomic(folder / STORAGE_GLOBAL_JSON, storage_json)
        # Written last: a copy interrupted before this line is re-checked against the files themselves.
        write_atomic(folder / STORAGE_LOCAL_JSON, json.dumps(asdict(local), sort_keys=True).encode())

    def delete(self, identifier: str) -> None:
        folder = self._dir(identifier)
        if not folder.is_symlink():  # a planted link is not ours to delete (nor what it leads to)
            shutil.rmtree(folder, ignore_errors=True)

    def checksums_from(self, source_node: str) -> tuple[dict[str, str], set[str], dict[str, str]]:
        """(checksum of every stored LR, ids of the LRs harvested from `source_node`, {id: owner} of the LRs
        that belong elsewhere: harvested from another node ("" for a master created here))."""
        checksums: dict[str, str] = {}
        from_source: set[str] = set()
        others: dict[str, str] = {}
        for identifier in self.ids():
            lr = self.get(identifier)
            if lr is None:
                continue
            try:
                checksums[identifier] = lr.checksum
            except MetashareError:  # a local copy that is not UTF-8 just counts as different
                checksums[identifier] = ""
            if lr.local is None:
                continue  # a copy interrupted before its bookkeeping: whoever lists it may complete it
            if lr.local.copy_status == REMOTE and lr.local.source_node == source_node:
                from_source.add(identifier)
            else:
                others[identifier] = lr.local.source_node if lr.local.copy_status == REMOTE else ""
        return checksums, from_source, others

    def add_master(self, metadata_xml: bytes, *, source_url: str, now: dt.datetime | None = None) -> str:
        """Store a new LR created on this node and return its new storage id."""
        identifier = new_storage_id()
        storage = _first_revision(identifier, format_date(now or dt.datetime.now()), source_url)
        local = StorageLocal(copy_status=MASTER, source_node="", metadata_md5=md5_hex(metadata_xml))
        self.put(identifier=identifier, metadata_xml=metadata_xml, storage_json=storage.to_json(), local=local)
        return identifier

    def refresh(self, identifier: str, *, source_url: str, now: dt.datetime | None = None) -> StoredLR | None:
        """Bring storage-global.json in line with metadata.xml: create it if missing, bump the revision on an edit."""
        lr = self.get(identifier)
        if lr is None:
            return None
        md5 = md5_hex(lr.metadata_xml)
        if lr.local is not None and lr.local.metadata_md5 == md5 and lr.storage_json:
            return lr
        stamp = format_date(now or dt.datetime.now())
        if not lr.storage_json:
            storage = _first_revision(identifier, stamp, source_url)
        else:
            storage = StorageGlobal.from_json(lr.storage_json)
            if lr.local is not None:  # metadata.xml changed since we last wrote storage-global.json
                storage = replace(storage, revision=storage.revision + 1, modified=stamp)
        # Without storage-local.json this is a copy we have never seen: adopt it as it stands.
        local = lr.local or StorageLocal(copy_status=MASTER, source_node="", metadata_md5=md5)
        local = replace(local, metadata_md5=md5)
        self.put(identifier=identifier, metadata_xml=lr.metadata_xml, storage_json=storage.to_json(), local=local)
        return self.get(identifier)


def _first_revision(identifier: str, stamp: str, source_url: str) -> StorageGlobal:
    return StorageGlobal(
        created=stamp,
        deleted=False,
        identifier=identifier,
        metashare_version=DEFAULT_METASHARE_VERSION,
        modified=stamp,
        publication_status="p",
        revision=1,
        source_url=source_url,
    )


def md5_hex(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def _read_or_none(path: Path) -> bytes | None:
    """The file's bytes; None if it is missing or a symlink (LR files are never links: not followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        if path.is_symlink():
            return None
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read()
