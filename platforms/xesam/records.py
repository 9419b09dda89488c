"""The reference target's data: a directory of JSON records, indexed in (mtime, uri) order.

A record file is `{"uri", "mtime", "content_cat", "source_cat", "fields", "deleted"}`; `mtime` is
milliseconds since the epoch or an ISO 8601 string (missing: the file's own modification time).
A record that is deleted (the flag, or its file removed) stays in the index as a tombstone.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swath.platforms.xesam.payload import DELETED, NORMAL, Payload, iso_to_ms, ms_to_iso

Key = tuple[int, str]  # (mtime ms, uri): the order payloads are sent in


class BadRecord(ValueError):
    """A record file that is not a JSON object with a uri."""


@dataclass(frozen=True, kw_only=True)
class Entry:
    uri: str
    mtime: int
    content_cat: str = ""
    source_cat: str = ""
    fields: tuple[tuple[str, str], ...] = ()
    deleted: bool = False

    @property
    def key(self) -> Key:
        return (self.mtime, self.uri)

    def payload(self, wanted_fields: frozenset[str]) -> Payload:
        if self.deleted:  # the spec allows empty categories and body for a deleted subject
            return Payload(uri=self.uri, timestamp=ms_to_iso(self.mtime), content_cat="", source_cat="",
                           state=DELETED, fields=())
        body = tuple(p for p in self.fields if not wanted_fields or p[0] in wanted_fields)
        return Payload(uri=self.uri, timestamp=ms_to_iso(self.mtime), content_cat=self.content_cat,
                       source_cat=self.source_cat, state=NORMAL, fields=body)


def parse_record(raw: bytes, *, file_mtime_ms: int) -> Entry:
    try:
        data: Any = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRecord(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("uri"), str) or not data["uri"]:
        raise BadRecord("a record must be a JSON object with a non-empty string 'uri'")
    mtime = data.get("mtime")
    if mtime is None:
        mtime = file_mtime_ms
    elif isinstance(mtime, str):
        mtime = iso_to_ms(mtime)
    elif not isinstance(mtime, int) or isinstance(mtime, bool) or mtime < 0:
        raise BadRecord(f"'mtime' must be milliseconds since the epoch or ISO 8601, got {mtime!r}")
    pairs: list[tuple[str, str]] = []
    for name, value in (data.get("fields") or {}).items():
        for v in value if isinstance(value, list) else [value]:
            pairs.append((str(name), v if isinstance(v, str) else json.dumps(v)))
    return Entry(uri=data["uri"], mtime=mtime, content_cat=str(data.get("content_cat") or ""),
                 source_cat=str(data.get("source_cat") or ""), fields=tuple(pairs),
                 deleted=bool(data.get("deleted", False)))


@dataclass
class Index:
    """Latest entry per uri, kept sorted by key; not thread-safe (the target holds its lock)."""

    keys: list[Key] = field(default_factory=list)
    entries: dict[str, Entry] = field(default_factory=dict)

    @property
    def high(self) -> Key:
        return self.keys[-1] if self.keys else (-1, "")

    def put(self, entry: Entry) -> None:
        old = self.entries.get(entry.uri)
        if old is not None:
            del self.keys[bisect.bisect_left(self.keys, old.key)]
        self.entries[entry.uri] = entry
        bisect.insort(self.keys, entry.key)

    def drop(self, uri: str) -> None:
        old = self.entries.pop(uri, None)
        if old is not None:
            del self.keys[bisect.bisect_left(self.keys, old.key)]

    def after(self, key: Key) -> Iterator[Entry]:
        """Entries with a key strictly greater than `key`, in order (a snapshot: safe to mutate after)."""
        for k in self.keys[bisect.bisect_right(self.keys, key):]:
            yield self.entries[k[1]]


@dataclass
class DirectoryScanner:
    """Finds new, changed and removed `*.json` files under a directory between two scans."""

    directory: Path
    seen: dict[Path, tuple[int, int]] = field(default_factory=dict)  # file -> (mtime_ns, size)
    uris: dict[Path, str] = field(default_factory=dict)  # file -> the uri it held

    def scan(self) -> tuple[list[tuple[Path, Entry]], list[str], list[tuple[Path, str]]]:
        """Returns (changed files with their entries, uris whose file disappeared, unreadable files)."""
        changed: list[tuple[Path, Entry]] = []
        bad: list[tuple[Path, str]] = []
        current: dict[Path, tuple[int, int]] = {}
        for path in sorted(self.directory.rglob("*.json")):
            try:
                st = path.stat()
            except FileNotFoundError:
                continue
            sig = (st.st_mtime_ns, st.st_size)
            current[path] = sig
            if self.seen.get(path) == sig:
                continue
            try:
                entry = parse_record(path.read_bytes(), file_mtime_ms=st.st_mtime_ns // 1_000_000)
            except (BadRecord, ValueError, OSError) as exc:
                bad.append((path, str(exc)))
                continue
            changed.append((path, entry))
        gone = [p for p in self.seen if p not in current]
        self.seen = {p: s for p, s in current.items() if p not in {b[0] for b in bad}}
        removed: list[str] = []
        for path in gone:
            uri = self.uris.pop(path, None)
            if uri is not None:
                removed.append(uri)
        for path, entry in changed:
            old = self.uris.get(path)
            if old is not None and old != entry.uri:
                removed.append(old)  # the file now holds another record: the old one is gone
            self.uris[path] = entry.uri
        live = set(self.uris.values())
        return changed, [u for u in removed if u not in live], bad
