"""An object directory: one per escaped URL, holding `<tist>_<status>_<type>` files.

Each renewal effort appends `<request tist> <status> <type>` to `00tistbase` (the tist base, kept as a
file). A body equal to the previous version's becomes a relative symlink to that version's real file,
so an unchanged object costs no disk. A redirect also writes `<tist>.redirect` holding the target URL.
Only links inside the object's own directory are versions: one leading elsewhere (planted) is ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote

from swath.core.paths import append_no_follow, make_dirs_inside, write_atomic
from swath.platforms.kiel.redist import escape_name

TISTBASE = "00tistbase"
_VERSION = re.compile(r"^(\d+)_(\d{3})_(.+)$")


def mime_token(content_type: str | None) -> str:
    """`text/html; charset=utf-8` -> `text-html`; missing -> `none`."""
    mime = (content_type or "").split(";")[0].strip().lower()
    return quote(mime.replace("/", "-"), safe="-_.+") if mime else "none"


@dataclass(frozen=True)
class Version:
    tist: int
    status: str
    type: str
    path: Path

    @property
    def real(self) -> Path:
        """The file holding the bytes (a symlinked version points to an earlier one)."""
        return self.path.resolve()


class ObjectDir:
    def __init__(self, parent: Path, url: str, *, root: Path) -> None:
        self.url = url
        self.path = parent / escape_name(url)
        self.root = root  # the archive: folders made below it are checked not to lead out of it

    @classmethod
    def at(cls, path: Path, *, root: Path) -> ObjectDir:
        """An object directory found on disk; its URL is what the escaped name tells (a prefix, for a name
        cut to 200 bytes)."""
        obj = cls(path.parent, unquote(path.name), root=root)
        obj.path = path
        return obj

    def versions(self) -> list[Version]:
        if not self.path.is_dir():
            return []
        found = []
        real_dir = Path(os.path.realpath(self.path))
        for entry in self.path.iterdir():
            m = _VERSION.match(entry.name)
            if m and (not entry.is_symlink() or Path(os.path.realpath(entry)).parent == real_dir):
                found.append(Version(int(m.group(1)), m.group(2), m.group(3), entry))
        return sorted(found, key=lambda v: v.tist)

    def fresh_tist(self, tist: int) -> int:
        """`tist`, or the next second free in this directory (two efforts within one second)."""
        taken = {v.tist for v in self.versions()}
        while tist in taken:
            tist += 1
        return tist

    def store(self, *, tist: int, status: int, content_type: str | None, body: bytes) -> Version:
        """Store one renewal; returns the new version (a symlink when the body did not change).
        Raises PathOutsideDataRoot if a symlink on the way leads out of the archive."""
        make_dirs_inside(self.root, self.path)
        versions = self.versions()
        name = f"{tist}_{status:03d}_{mime_token(content_type)}"
        target = self.path / name
        previous = versions[-1] if versions else None
        if body and previous is not None and _same_bytes(previous.real, body):
            os.symlink(os.path.relpath(previous.real, self.path), target)
        else:
            write_atomic(target, body)
        append_no_follow(self.path / TISTBASE, f"{tist} {status:03d} {mime_token(content_type)}\n".encode("ascii"))
        m = _VERSION.match(name)
        if m is None:  # a negative tist or a status past 999: the AttributeError m.group() raised
            raise AttributeError(f"{name!r} is not a version name")
        return Version(tist, m.group(2), m.group(3), target)

    def redirect(self, *, tist: int, location: str) -> None:
        write_atomic(self.path / f"{tist}.redirect", location.encode() + b"\n")


def _same_bytes(path: Path, body: bytes) -> bool:
    try:
        if path.stat().st_size != len(body):
            return False
        return path.read_bytes() == body
    except FileNotFoundError:
        return False
