"""The protocol's data: storage ids, LR checksums and the global storage JSON (META-SHARE Harvesting Protocol v1.0)."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import uuid
from dataclasses import asdict, dataclass

from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.safexml import parse_xml
from swath.messages import codes
from swath.platforms.metashare.errors import MetashareError

SYNC_PROTOCOL = "1.0"
METADATA_XML = "metadata.xml"
STORAGE_GLOBAL_JSON = "storage-global.json"
INVENTORY_JSON = "inventory.json"
LR_ENTRIES = (METADATA_XML, STORAGE_GLOBAL_JSON)  # order matters: the spec fixes first and second file
DATE_FORMAT = "%Y-%m-%d %H:%M:%S"
PUBLICATION_STATUSES = frozenset({"g", "p"})  # ingested, published; anything else is internal and not served

_STORAGE_ID = re.compile(r"\A[0-9a-f]{64}\Z")
_CHECKSUM = re.compile(r"\A[0-9a-f]{32}\Z")


def is_storage_id(value: object) -> bool:
    return isinstance(value, str) and bool(_STORAGE_ID.match(value))


def is_checksum(value: object) -> bool:
    return isinstance(value, str) and bool(_CHECKSUM.match(value))


def new_storage_id() -> str:
    """A version 1 UUID followed by a version 4 UUID, both as 32 lower-case hex digits."""
    return uuid.uuid1().hex + uuid.uuid4().hex


def lr_checksum(metadata_xml: bytes, storage_json: bytes) -> str:
    """MD5 of the two files' text concatenated; both must be UTF-8 (the spec hashes them as Unicode strings)."""
    digest = hashlib.md5()
    for name, data in ((METADATA_XML, metadata_xml), (STORAGE_GLOBAL_JSON, storage_json)):
        try:
            data.decode("utf-8")  # valid UTF-8 bytes are their own Unicode-string encoding
        except UnicodeDecodeError as exc:
            raise MetashareError(f"{name} is not UTF-8: {exc}", code=codes.INVALID_LR) from None
        digest.update(data)
    return digest.hexdigest()


def check_metadata_xml(data: bytes, *, what: str) -> None:
    """Raise MetashareError(invalid_lr) unless `data` is well-formed XML without a DOCTYPE (the safe parser's
    rules, which the exporter reads it by: an LR accepted here is one the export can read)."""
    try:
        parse_xml(data)
    except MetadataError as exc:
        raise MetashareError(f"{what}: {METADATA_XML} is not well-formed XML without a DOCTYPE: {exc}",
                             code=codes.INVALID_LR) from None


def format_date(when: dt.datetime) -> str:
    return when.strftime(DATE_FORMAT)


@dataclass(frozen=True, kw_only=True)
class StorageGlobal:
    """The eight members of storage-global.json; field order here is irrelevant, to_json sorts the keys."""

    created: str
    deleted: bool
    identifier: str
    metashare_version: str
    modified: str
    publication_status: str
    revision: int
    source_url: str

    def to_json(self) -> bytes:
        # Sorted keys and no optional whitespace, as the spec requires byte for byte.
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> StorageGlobal:
        """Parse and check storage-global.json; raises MetashareError(invalid_lr)."""
        try:
            body = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise MetashareError(f"{STORAGE_GLOBAL_JSON} is not UTF-8 JSON: {exc}", code=codes.INVALID_LR) from None
        except RecursionError:  # eight flat members; nesting this deep is hostile
            raise MetashareError(f"{STORAGE_GLOBAL_JSON} is nested too deeply", code=codes.INVALID_LR) from None
        expected = sorted(cls.__dataclass_fields__)
        if not isinstance(body, dict) or sorted(body) != expected:
            got = sorted(body) if isinstance(body, dict) else type(body).__name__
            raise MetashareError(f"{STORAGE_GLOBAL_JSON} must have exactly the keys {expected}, got {got}",
                                 code=codes.INVALID_LR)
        problems = [
            name
            for name, ok in (
                ("created", _is_date(body["created"])),
                ("modified", _is_date(body["modified"])),
                ("deleted", isinstance(body["deleted"], bool)),
                ("identifier", is_storage_id(body["identifier"])),
                ("metashare_version", isinstance(body["metashare_version"], str)),
                ("publication_status",
                 isinstance(body["publication_status"], str) and len(body["publication_status"]) == 1),
                ("revision", type(body["revision"]) is int and body["revision"] > 0),
                ("source_url", isinstance(body["source_url"], str)),
            )
            if not ok
        ]
        if problems:
            raise MetashareError(f"{STORAGE_GLOBAL_JSON} has invalid members: {', '.join(problems)}",
                                 code=codes.INVALID_LR)
        return cls(**body)


def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return False
    try:
        dt.datetime.strptime(value, DATE_FORMAT)
    except ValueError:
        return False
    return True
