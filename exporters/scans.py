"""Each WARC's record offsets, found once: a WARC does not change after it is written, so exporting the
same WARCs again (another format, other dates, another segment size) skips the pass that inflates every
record just to find where it starts.

A scan is kept in `<data_root>/.swath/records/<sha1 of the WARC's path>.json` with the file's size and
mtime; a WARC whose size or mtime changed is scanned again. Only scans without a fact test are kept:
facts depend on the export type (see items.Source.is_fact), and the types with facts read small
current-state collections.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from swath.core.paths import PathOutsideDataRoot, make_dirs_inside, read_no_follow, write_atomic
from swath.core.warc_files import Stat, is_object_url, stat_warc
from swath.exporters.warc_reader import IsFact, RecordRef, scan_refs

CACHE_DIR = ".swath/records"


@dataclass
class Scan:
    """One WARC's records (see warc_reader.scan_refs) and the damage found on the way."""

    warc: str
    refs: list[RecordRef]
    warnings: list[str]


def scan(warc: str, *, is_fact: IsFact | None, cache_root: Path | None) -> Scan:
    """The WARC's Scan, from the cache under `cache_root` (the data root) when it is still the file's."""
    cache = _cache_path(cache_root, warc) if cache_root is not None and is_fact is None else None
    if cache is not None:
        stat = stat_warc(warc)  # an object's scan is kept by its URL and size: an object never changes
        cached = _load(cache, warc, stat) if stat is not None else None
        if cached is not None:
            return cached
    warnings: list[str] = []
    refs = scan_refs(warc, on_truncated=lambda path, message: warnings.append(message), is_fact=is_fact)
    result = Scan(warc, refs, warnings)
    if cache_root is not None and cache is not None and stat is not None and _unchanged(warc, stat):
        _save(cache_root, cache, result, stat)
    return result


def _unchanged(warc: str, stat: Stat) -> bool:
    return is_object_url(warc) or os.stat(warc).st_mtime_ns == stat.mtime_ns


def _cache_path(cache_root: Path, warc: str) -> Path:
    name = warc if is_object_url(warc) else os.path.realpath(warc)
    return cache_root / CACHE_DIR / f"{hashlib.sha1(name.encode()).hexdigest()}.json"


def _load(cache: Path, warc: str, stat: Stat) -> Scan | None:
    try:
        data = json.loads(read_no_follow(cache))  # a FIFO planted there would be waited on for ever
        if data["size"] != stat.size or data["mtime_ns"] != stat.mtime_ns:
            return None
        refs = [RecordRef(warc=warc, offset=offset, date=dt.datetime.fromisoformat(date))
                for offset, date in data["refs"]]
        return Scan(warc, refs, list(data["warnings"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, stale or damaged: scan again


def _save(cache_root: Path, cache: Path, result: Scan, stat: Stat) -> None:
    data = {"warc": result.warc, "size": stat.size, "mtime_ns": stat.mtime_ns, "warnings": result.warnings,
            "refs": [[r.offset, r.date.isoformat()] for r in result.refs]}
    try:
        make_dirs_inside(cache_root, cache.parent)
        write_atomic(cache, json.dumps(data, separators=(",", ":")).encode())
    except (OSError, PathOutsideDataRoot):
        pass  # a read-only data root (or a planted .swath link) still exports, it only scans every time
