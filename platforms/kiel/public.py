"""What the `swath kiel` commands use of this room: a branches file checked, a record's notes read back.

The CLI (swath/commands/kiel.py) imports this module only; the room's other modules are its own.
"""

from __future__ import annotations

from pathlib import Path

from swath.platforms.kiel.archive import Archive
from swath.platforms.kiel.branches import BadBranches, load_branches
from swath.platforms.kiel.notes import BadNote, read_notes
from swath.platforms.kiel.redist import REDISTS

__all__ = ["REDIST_NAMES", "BadBranches", "BadNote", "branch_xpaths", "read_notes", "record_directory"]

REDIST_NAMES = tuple(REDISTS)  # the kiel_archive harvest's `redist` option's values


def branch_xpaths(file: Path) -> tuple[str, ...]:
    """The branches' XPaths (relative to /amf/text) of a branches file; raises BadBranches naming every problem."""
    return load_branches(file).xpaths


def record_directory(archive: Path, record_id: str, *, redist: str) -> Path:
    """Where `archive` (harvested with the redist named `redist`) keeps the record `record_id` (it may not exist)."""
    return Archive(root=archive, redist=REDISTS[redist]()).record(record_id).path
