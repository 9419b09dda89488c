"""The termination strategy: which old object versions to delete, read from a configuration file.

```
[termination]
max_full_age = 365d     # versions older than this go (the newest version always stays)
keep_versions = 10      # at most this many versions per object
max_control_age = 30d   # only prune objects renewed this recently: a dead link keeps its history
```

Full age is now minus the oldest version's tist; control age is now minus the newest one's (the
paper's terms). Deleting a version other versions link to moves its bytes to the oldest survivor.
"""

from __future__ import annotations

import configparser
import os
import re
from dataclasses import dataclass
from pathlib import Path

from swath.platforms.kiel.objects import ObjectDir, Version

_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


class BadTermination(ValueError):
    """An unreadable or invalid termination file."""


def parse_duration(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+)\s*([smhdw]?)\s*", text)
    if not m:
        raise BadTermination(f"{text!r} is not a duration like 90d, 12h or 3600")
    return int(m.group(1)) * _UNITS[m.group(2)]


@dataclass(frozen=True, kw_only=True)
class Termination:
    max_full_age: int | None = None
    keep_versions: int | None = None
    max_control_age: int | None = None

    @classmethod
    def load(cls, path: Path) -> Termination:
        parser = configparser.ConfigParser(inline_comment_prefixes=("#", ";"))
        try:
            if not parser.read(path, encoding="utf-8"):
                raise BadTermination(f"{path}: cannot read the termination file")
        except configparser.Error as exc:
            raise BadTermination(f"{path}: {exc}") from None
        if not parser.has_section("termination"):
            raise BadTermination(f"{path}: no [termination] section")
        section = parser["termination"]
        unknown = set(section) - {"max_full_age", "keep_versions", "max_control_age"}
        if unknown:
            raise BadTermination(f"{path}: unknown setting(s) {', '.join(sorted(unknown))}")
        keep = section.get("keep_versions")
        if keep is not None and (not keep.strip().isdigit() or int(keep) < 1):
            raise BadTermination(f"{path}: keep_versions must be a whole number of at least 1")
        return cls(
            max_full_age=parse_duration(section["max_full_age"]) if "max_full_age" in section else None,
            keep_versions=int(keep) if keep is not None else None,
            max_control_age=parse_duration(section["max_control_age"]) if "max_control_age" in section else None,
        )

    def doomed(self, versions: list[Version], now: int) -> list[Version]:
        """The versions (oldest first) this strategy deletes; never the newest."""
        if len(versions) < 2:
            return []
        if self.max_control_age is not None and now - versions[-1].tist > self.max_control_age:
            return []
        cut = 0
        if self.max_full_age is not None:
            while cut < len(versions) - 1 and now - versions[cut].tist > self.max_full_age:
                cut += 1
        if self.keep_versions is not None:
            cut = max(cut, len(versions) - self.keep_versions)
        return versions[:cut]

    def prune(self, obj: ObjectDir, now: int) -> list[str]:
        """Delete the doomed versions of one object; returns their file names."""
        versions = obj.versions()
        doomed = self.doomed(versions, now)
        survivors = versions[len(doomed):]
        for version in doomed:
            if not version.path.is_symlink():
                _hand_over(version, survivors, obj.path)
            version.path.unlink(missing_ok=True)  # gone already when its bytes moved to an heir
            (obj.path / f"{version.tist}.redirect").unlink(missing_ok=True)
        return [v.path.name for v in doomed]


def _hand_over(version: Version, survivors: list[Version], directory: Path) -> None:
    """Move a real file's bytes to the oldest survivor linking to it and repoint the other links."""
    real = version.path.resolve()
    heirs = [s for s in survivors if s.path.is_symlink() and s.path.resolve() == real]
    if not heirs:
        return
    heir = heirs[0].path
    heir.unlink()
    os.replace(version.path, heir)
    for other in heirs[1:]:
        other.path.unlink()
        other.path.symlink_to(os.path.relpath(heir, directory))
