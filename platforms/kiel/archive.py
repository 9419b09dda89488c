"""Record directories: `<tist>.amf.xml` versions, `00last`, the record's tist base, its objects.

```
<archive>/records/<redist path>/
    1795304354.amf.xml      a version, stored only when its bytes differ from the current one
    00last                  "<start tist> <end tist>\n" of the last renewal
    00tistbase              the record's request tist ("0" while it is a virgin record)
    objects/<escaped url>/  object directories (objects.py)
```
Nothing is written through a symlink leading out of the archive, and record versions are never links:
a planted one is neither read nor followed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from swath.core.paths import make_dirs_inside, write_atomic
from swath.platforms.kiel.objects import TISTBASE, ObjectDir
from swath.platforms.kiel.redist import Redist

_RECORD_VERSION = re.compile(r"^(\d+)\.amf\.xml$")


@dataclass
class RecordDir:
    path: Path
    root: Path  # the archive: every folder made below it is checked not to lead out of it

    def versions(self) -> list[tuple[int, Path]]:
        if not self.path.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.path.iterdir()
                 if (m := _RECORD_VERSION.match(p.name)) and not p.is_symlink()]
        return sorted(found)

    def current(self) -> Path | None:
        versions = self.versions()
        return versions[-1][1] if versions else None

    def open(self) -> bool:
        """Create the directory if needed; True for a virgin record (request tist 0 in its tist base).
        Raises PathOutsideDataRoot if a symlink on the way leads out of the archive."""
        make_dirs_inside(self.root, self.path)
        if (self.path / TISTBASE).exists():
            return False
        write_atomic(self.path / TISTBASE, b"0\n")
        return True

    def renew(self, data: bytes, tist: int) -> Path | None:
        """Store `data` as `<tist>.amf.xml` unless it is byte-identical to the current version."""
        versions = self.versions()
        if versions and versions[-1][1].read_bytes() == data:
            return None
        if versions and tist <= versions[-1][0]:  # two renewals within one second keep their order
            tist = versions[-1][0] + 1
        path = self.path / f"{tist}.amf.xml"
        write_atomic(path, data)
        return path

    def requested(self, tist: int) -> None:
        write_atomic(self.path / TISTBASE, f"{tist}\n".encode())

    def finish(self, start: int, end: int) -> None:
        write_atomic(self.path / "00last", f"{start} {end}\n".encode())

    def object(self, url: str) -> ObjectDir:
        return ObjectDir(self.path / "objects", url, root=self.root)


@dataclass(kw_only=True)
class Archive:
    root: Path
    redist: Redist

    def record(self, record_id: str) -> RecordDir:
        return RecordDir(self.root / "records" / self.redist.directory(record_id), self.root)

    @property
    def etc(self) -> Path:
        return self.root / "etc"
