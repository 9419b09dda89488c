"""Recovering a WARC a run left `.open` (killed, or its disk failed): cut after its last complete record,
fsync, rename (`recover`). Each record is its own gzip member, so what a killed writer leaves is whole members
followed by at most one partial one. Used by harvesters/warc.py and the recorder's resume.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterable
from pathlib import Path

from swath.core.paths import fsync_dir, open_no_follow

OPEN_SUFFIX = ".open"


def _complete_members(data: bytes) -> Iterable[tuple[int, bytes]]:
    """Yield (end offset, decompressed bytes) for each complete gzip member, stopping at a broken one."""
    offset = 0
    while offset < len(data):
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            block = inflater.decompress(data[offset:])
        except zlib.error:
            return
        if not inflater.eof:
            return
        offset = len(data) - len(inflater.unused_data)
        yield offset, block


def _is_whole_record(block: bytes) -> bool:
    head, sep, rest = block.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"WARC/"):
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return rest == rest[: int(value)] + b"\r\n\r\n" and len(rest) == int(value) + 4
    return False


def recover(open_path: Path) -> Path | None:
    """Cut a leftover `.open` WARC after its last complete record, fsync and rename it.

    Returns the finished path, or None (file removed) when not even one complete record survived.
    """
    with open_no_follow(open_path, write=True) as fh:  # a link planted as a leftover is refused, not cut
        data = fh.read()
        good_end, content_records = _complete_end(data)
        if content_records:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    if content_records == 0:
        open_path.unlink()
        return None
    final = open_path.with_name(open_path.name[: -len(OPEN_SUFFIX)])
    os.replace(open_path, final)
    fsync_dir(final.parent)
    return final


def _complete_end(data: bytes) -> tuple[int, int]:
    """Where the last complete record of a leftover ends, and how many complete records other than the warcinfo."""
    good_end = 0
    content_records = 0  # complete records other than the warcinfo
    for end, block in _complete_members(data):
        if not _is_whole_record(block):
            break
        good_end = end
        if b"\r\nWARC-Type: warcinfo\r\n" not in block.partition(b"\r\n\r\n")[0] + b"\r\n":
            content_records += 1
    return good_end, content_records
