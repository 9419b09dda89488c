"""Which WARC files belong to a collection, without opening any of them.

The index is built by scanning the data root and cached in `<data_root>/.swath/warc-index.json`,
keyed by directory and refreshed by directory mtime, so a repeat export only re-lists changed
directories. A WARC belongs to a collection when one of the directories above it is named by the
collection id: SFM's `collections/<set>/<collection>/YYYY/MM/DD/HH/` and swath's harvest `path`
(which ends in the collection id) both fit. `add()` is the hook for recording warc_created messages.

`select()` is what an export asks: the listing answers it with every WARC of the collection (or every
WARC, for seeds), and says so; the store's index (swath/export_index.py, fed by warc_created) answers with
the WARCs of the seeds and harvest dates alone, and hands back to this listing when it cannot answer.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypedDict

from swath.core.paths import PathOutsideDataRoot, make_dirs_inside, read_no_follow, write_atomic
from swath.messages import codes
from swath.messages.model import ExportStart

WARC_SUFFIXES = (".warc.gz", ".warc", ".warc.zst", ".warc.lz4")
CACHE_NAME = ".swath/warc-index.json"


@dataclass(frozen=True)
class Selected:
    """The WARCs an export is to read (path order), and what the index says about how it found them."""

    warcs: list[Path | str]  # a str: an s3:// object (core/warc_files.py)
    infos: list[tuple[str, str]] = field(default_factory=list)  # (code, message) for the export status
    warnings: list[tuple[str, str]] = field(default_factory=list)
    outside_dates: int = 0  # when no WARC is left: how many of the collection or seeds the harvest dates left out


class WarcIndex(Protocol):
    def select(self, start: ExportStart) -> Selected:
        """The WARCs that may hold the export's items: by collection or seeds, and harvest dates."""

    def warcs_for(self, collection_id: str) -> list[Path]:
        """WARCs of one collection, in path order (SFM paths run by harvest hour)."""

    def all_warcs(self) -> list[Path]:
        """Every WARC under the data root (seed exports, which name no collection)."""

    def add(self, collection_id: str, path: Path) -> None:
        """Record a WARC announced by a warc_created message."""

    def collection_dirs(self, collection_id: str) -> list[Path]:
        """The directories named by the collection id (with or without WARCs): says why an export found none."""


def is_warc(name: str) -> bool:
    return name.endswith(WARC_SUFFIXES) and not name.startswith(".")


class _Dir(TypedDict):
    """One directory as the scan cache keeps it."""

    mtime: int  # ns
    warcs: list[str]
    subdirs: list[str]


class ScanIndex:
    def __init__(self, *, data_root: Path) -> None:
        self.root = Path(os.path.realpath(data_root))
        self.cache_path = self.root / CACHE_NAME
        self._dirs: dict[str, _Dir] = {}  # relative dir -> its entry
        self._added: dict[str, list[str]] = {}
        self._load()
        self._refresh()

    def _load(self) -> None:
        try:
            data = json.loads(read_no_follow(self.cache_path))  # never a link, FIFO or device planted there
            self._dirs = data.get("dirs", {})
            self._added = data.get("added", {})
        except (OSError, ValueError):
            self._dirs, self._added = {}, {}

    def _save(self) -> None:
        make_dirs_inside(self.root, self.cache_path.parent)
        write_atomic(self.cache_path, json.dumps({"dirs": self._dirs, "added": self._added}).encode())

    def _refresh(self) -> None:
        fresh: dict[str, _Dir] = {}
        changed = False
        stack = [""]
        while stack:
            rel = stack.pop()
            full = self.root / rel if rel else self.root
            try:
                mtime = os.stat(full).st_mtime_ns
            except OSError:
                continue
            entry = self._dirs.get(rel)
            if entry is None or entry["mtime"] != mtime:
                changed = True
                warcs: list[str] = []
                subdirs: list[str] = []
                try:
                    with os.scandir(full) as it:
                        for e in it:
                            if e.name == ".swath":
                                continue
                            if e.is_dir(follow_symlinks=False):
                                subdirs.append(e.name)
                            elif is_warc(e.name):
                                warcs.append(e.name)
                except OSError:
                    continue
                entry = {"mtime": mtime, "warcs": sorted(warcs), "subdirs": sorted(subdirs)}
            fresh[rel] = entry
            stack.extend(f"{rel}/{d}" if rel else d for d in entry["subdirs"])
        if changed or fresh.keys() != self._dirs.keys():
            self._dirs = fresh
            try:
                self._save()
            except (OSError, PathOutsideDataRoot):
                pass  # a read-only data root (or a planted .swath link) still exports; it just rescans next time

    def _iter(self) -> Iterable[tuple[tuple[str, ...], Path]]:
        for rel, entry in self._dirs.items():
            parts = tuple(rel.split("/")) if rel else ()
            for name in entry["warcs"]:
                yield parts, self.root / rel / name if rel else self.root / name

    def warcs_for(self, collection_id: str) -> list[Path]:
        found = {p for parts, p in self._iter() if collection_id in parts}
        found.update(Path(p) for p in self._added.get(collection_id, ()))
        return sorted(found, key=str)

    def collection_dirs(self, collection_id: str) -> list[Path]:
        return sorted(self.root / rel for rel in self._dirs if rel.split("/")[-1] == collection_id)

    def all_warcs(self) -> list[Path]:
        found = {p for _, p in self._iter()}
        for paths in self._added.values():
            found.update(Path(p) for p in paths)
        return sorted(found, key=str)

    def select(self, start: ExportStart, *, why: str = "no WARC index was given to this export") -> Selected:
        """Every WARC of the collection (every WARC for seeds): a listing cannot tell seeds or dates apart."""
        warcs = self.warcs_for(start.collection_id) if start.collection_id else self.all_warcs()
        what = f"of collection {start.collection_id}" if start.collection_id else "under the data root (all seeds)"
        return Selected(list(warcs), infos=[(codes.WARC_INDEX_SCAN, f"{why}: read the {len(warcs)} WARC(s) {what} "
                                       "found by listing the data root")])

    def add(self, collection_id: str, path: Path) -> None:
        paths = self._added.setdefault(collection_id, [])
        if str(path) not in paths:
            paths.append(str(path))
            self._save()


class ListingAnswers:
    """The WarcIndex methods beside `select` answered by the listing of `self.root` (an index whose own answer
    is only `select`: the store's, sfm-ui's)."""

    root: Path

    @functools.cached_property
    def scan(self) -> ScanIndex:
        return ScanIndex(data_root=self.root)

    def warcs_for(self, collection_id: str) -> list[Path]:
        return self.scan.warcs_for(collection_id)

    def all_warcs(self) -> list[Path]:
        return self.scan.all_warcs()

    def add(self, collection_id: str, path: Path) -> None:
        self.scan.add(collection_id, path)

    def collection_dirs(self, collection_id: str) -> list[Path]:
        return self.scan.collection_dirs(collection_id)
