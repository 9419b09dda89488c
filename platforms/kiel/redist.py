"""Record directory strategies ("redist" in the Kiel paper): where a record's directory lives.

A redist maps a record id to a relative directory; every part is escaped so any id is a safe name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Protocol
from urllib.parse import quote

MAX_NAME = 200  # bytes; file systems allow 255, and object files add a tist prefix inside


def escape_name(text: str) -> str:
    """One safe path component for any string: percent-escaped, never `.`/`..`, bounded in length."""
    name = quote(text, safe="-_.~@+=,")
    if name in ("", ".", ".."):
        name = name.replace(".", "%2E") or "%00"
    if len(name.encode()) > MAX_NAME:  # keep a readable prefix, made unique by a digest of the whole
        name = name[:MAX_NAME - 41] + "~" + hashlib.sha1(text.encode()).hexdigest()
    return name


class Redist(Protocol):
    name: str

    def directory(self, record_id: str) -> PurePosixPath:
        """The record directory, relative to the archive's records root."""


class NestedRedist:
    """The default: two levels of a digest of the id spread any id set evenly (`3f/a9/<escaped id>`)."""

    name = "nested"

    def directory(self, record_id: str) -> PurePosixPath:
        digest = hashlib.sha1(record_id.encode()).hexdigest()
        return PurePosixPath(digest[:2], digest[2:4], escape_name(record_id))


class RepecRedist:
    """RePEc handles `RePEc:<archive>:<series>:<item>` become `<archive>/<series>/<item>` (case folded,
    as RePEc handles are case-insensitive); other ids fall back to the nested redist under `_other/`."""

    name = "repec"

    def directory(self, record_id: str) -> PurePosixPath:
        parts = record_id.split(":", 3)
        if len(parts) == 4 and parts[0].lower() == "repec" and all(parts[1:]):
            return PurePosixPath(*(escape_name(p.lower()) for p in parts[1:]))
        return PurePosixPath("_other") / NestedRedist().directory(record_id)


REDISTS: dict[str, Callable[[], Redist]] = {"nested": NestedRedist, "repec": RepecRedist}
