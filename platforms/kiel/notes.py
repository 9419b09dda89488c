"""Kiel notes (the paper's third kind of item): what the system did to a record and its objects.

Each renewal of a record writes one file `<tist>.notes.jsonl` into the record directory, beside the
record versions and `objects/`: one JSON object per line, one line per event, in the order the events
happened. A notes file is written once, atomically (a reader sees all of it or none), and never
rewritten; the format is in docs/kiel.md ("Notes").

    {"tist": 1700000003, "item": "object", "subject": "http://example.org/a.pdf", "event": "fetched",
     "outcome": "unchanged", "status": "200", "type": "application-pdf", "file": "1700000003_200_...", ...}
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from swath.core.jsontypes import JSONObject
from swath.core.paths import read_inside, write_atomic

SUFFIX = ".notes.jsonl"
FIXED = ("tist", "item", "subject", "event", "outcome")  # every note has these, first and in this order
ITEMS = ("record", "object")
_NAME = re.compile(r"^(\d+)\.notes\.jsonl$")


class BadNote(ValueError):
    """A line of a notes file that is not a note (edited by hand, or cut by a full disk)."""


@dataclass(frozen=True)
class Note:
    tist: int  # when it happened (for a fetch: when the request started)
    item: str  # "record" or "object"
    subject: str  # the record id, or the object's URL
    event: str  # what was done: renewed, fetched, dropped, terminated
    outcome: str  # how it ended (docs/kiel.md lists them per event)
    detail: dict[str, object] = field(default_factory=dict)  # status, type, file, ... (scalars only)

    def line(self) -> bytes:
        fixed = {"tist": self.tist, "item": self.item, "subject": self.subject, "event": self.event,
                 "outcome": self.outcome}
        return orjson.dumps({**fixed, **{k: v for k, v in self.detail.items() if v is not None}}) + b"\n"

    def as_dict(self) -> JSONObject:
        data: JSONObject = orjson.loads(self.line())
        return data

    @classmethod
    def parse(cls, line: bytes) -> Note:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BadNote(f"not JSON: {exc}") from None
        if not isinstance(data, dict) or any(k not in data for k in FIXED):
            raise BadNote(f"a note is a JSON object with {', '.join(FIXED)}")
        tist = data.pop("tist")
        if not isinstance(tist, int) or isinstance(tist, bool) or data["item"] not in ITEMS:
            raise BadNote("tist must be a whole number and item 'record' or 'object'")
        item, subject, event, outcome = (data.pop(k) for k in FIXED[1:])
        if not all(isinstance(v, str) for v in (subject, event, outcome)):
            raise BadNote("subject, event and outcome must be strings")
        return cls(tist, item, subject, event, outcome, data)


@dataclass
class Notebook:
    """The notes of one renewal of one record, written out together by `write`."""

    record_id: str
    notes: list[Note] = field(default_factory=list)

    def record(self, tist: int, event: str, outcome: str, **detail: object) -> None:
        self.notes.append(Note(tist, "record", self.record_id, event, outcome, detail))

    def object(self, tist: int, url: str, event: str, outcome: str, **detail: object) -> None:
        self.notes.append(Note(tist, "object", url, event, outcome, detail))

    def write(self, directory: Path, tist: int) -> Path | None:
        """`<tist>.notes.jsonl` (the next free tist if a renewal in the same second took it); None if empty.
        The folder was checked with make_dirs_inside; write_atomic never writes through a planted link."""
        if not self.notes:
            return None
        taken = {int(m.group(1)) for p in _listing(directory) if (m := _NAME.match(p.name))}
        while tist in taken:
            tist += 1
        path = directory / f"{tist}{SUFFIX}"
        write_atomic(path, b"".join(note.line() for note in self.notes))
        return path


def _listing(directory: Path) -> list[Path]:
    return list(directory.iterdir()) if directory.is_dir() else []


def notes_files(directory: Path) -> list[Path]:
    """The record directory's notes files, oldest first (by the tist in the name); links are not notes."""
    found = [(int(m.group(1)), p) for p in _listing(directory) if (m := _NAME.match(p.name)) and not p.is_symlink()]
    return [p for _tist, p in sorted(found)]


def read_notes(directory: Path, *, root: Path) -> Iterator[tuple[Path, int, Note | BadNote]]:
    """Every note of a record directory in order: (file, line number, the note or why the line is not one).
    Files are read only when their real path is inside `root` (PathOutsideDataRoot otherwise)."""
    for path in notes_files(directory):
        lines = read_inside(root, path).split(b"\n")
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                yield path, number, Note.parse(line)
            except BadNote as exc:
                yield path, number, exc


def link_name(path: Path) -> str | None:
    """The file a symlinked object version points to (its name), or None for a real file."""
    return Path(os.readlink(path)).name if path.is_symlink() else None
