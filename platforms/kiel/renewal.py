"""One renewal of one record: store its version, renew the objects of the current version, apply the
termination strategy, and write what was done as the renewal's notes (notes.py).

The record-change rule (an open question in the Kiel paper): when a record changes, the objects its
previous version referred to and the new one does not are *kept* — nothing is deleted because a record
was edited — each gets a `dropped` note, and they are no longer renewed. Like every object of the record
that was not renewed this time (redirect targets no longer reached too), they stay subject to the
termination strategy, which never deletes an object's newest version.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from swath.harvesters.base import Harvest
from swath.harvesters.mapping.errors import MetadataError
from swath.messages import codes
from swath.platforms.kiel.amf import AmfRecord
from swath.platforms.kiel.archive import RecordDir
from swath.platforms.kiel.branches import Branches
from swath.platforms.kiel.fetch import Fetched, renew_object
from swath.platforms.kiel.notes import Notebook, link_name
from swath.platforms.kiel.objects import ObjectDir
from swath.platforms.kiel.redist import escape_name
from swath.platforms.kiel.termination import Termination


@dataclass(kw_only=True)
class Renewal:
    harvest: Harvest
    branches: Branches
    termination: Termination | None
    clock: Callable[[], float]

    def run(self, rdir: RecordDir, record: AmfRecord) -> None:
        """Renew `record` in `rdir`; raises PathOutsideDataRoot (a planted link) or MetadataError (a stored
        version the safe parser refuses), having written the notes of what was done up to then."""
        harvest = self.harvest
        start = int(self.clock())
        if rdir.open():
            harvest.count("records_new")
        previous = rdir.current()
        stored = rdir.renew(record.data, start)
        harvest.count("records_changed" if stored else "records_unchanged")
        rdir.requested(start)
        book = Notebook(record.id)
        try:
            current = rdir.current()
            urls = self._urls(current, record)
            self._note_record(book, start, record, previous, current if stored else None, urls)
            touched: set[str] = set()
            for url in urls:  # objects of the current version only
                chain = renew_object(harvest.http, rdir, url, clock=self.clock)
                for hop in chain:
                    touched.add(escape_name(hop.url))
                    self._fetched(book, hop)
                for hop in chain:  # after the chain, so the notes stay in the order things happened
                    self._prune(book, rdir.object(hop.url))
            self._prune_others(book, rdir, touched)
        finally:
            book.write(rdir.path, start)
        rdir.finish(start, int(self.clock()))

    def _urls(self, version: Path | None, record: AmfRecord) -> list[str]:
        return self.branches.urls(version.read_bytes()) if version is not None and record.noun == "text" else []

    def _note_record(self, book: Notebook, tist: int, record: AmfRecord, previous: Path | None,
                     stored: Path | None, urls: list[str]) -> None:
        """The record's note; when it changed, what that did to its objects (the record-change rule)."""
        if stored is None:
            book.record(tist, "renewed", "unchanged", file=previous.name if previous else None)
            return
        if previous is None:
            book.record(tist, "renewed", "new", file=stored.name, objects=len(urls))
            return
        try:
            old = self._urls(previous, record)
        except MetadataError:  # the previous version was edited on disk into something unsafe: no comparison
            old = []
        dropped, added = [u for u in old if u not in urls], [u for u in urls if u not in old]
        book.record(tist, "renewed", "changed", file=stored.name, previous=previous.name,
                    objects_kept=len(urls) - len(added), objects_added=len(added), objects_dropped=len(dropped))
        for url in dropped:
            book.object(tist, url, "dropped", "kept", version=stored.name)
        if dropped:
            self.harvest.count("objects_dropped", len(dropped))

    def _fetched(self, book: Notebook, hop: Fetched) -> None:
        harvest, version = self.harvest, hop.version
        harvest.count("objects_unchanged" if hop.unchanged else "objects_stored")
        problem = harvest.redactor.text(hop.problem) if hop.problem else None
        if problem:
            harvest.warning(codes.KIEL_REDIRECT_LOOP if hop.loop else codes.KIEL_OBJECT_FAILED, f"{hop.url}: {problem}")
        book.object(version.tist, hop.url, "fetched", hop.outcome, status=f"{hop.status:03d}", type=version.type,
                    file=version.path.name, same_as=link_name(version.path) if hop.unchanged else None,
                    location=hop.location or None, problem=problem)

    def _prune_others(self, book: Notebook, rdir: RecordDir, touched: set[str]) -> None:
        """The termination strategy for the record's objects not renewed this time (dropped ones included)."""
        objects = rdir.path / "objects"
        if self.termination is None or objects.is_symlink() or not objects.is_dir():
            return
        for entry in sorted(objects.iterdir()):
            if entry.name not in touched and entry.is_dir() and not entry.is_symlink():
                self._prune(book, ObjectDir.at(entry, root=rdir.root))

    def _prune(self, book: Notebook, obj: ObjectDir) -> None:
        if self.termination is None:
            return
        now = int(self.clock())
        pruned = self.termination.prune(obj, now)
        for name in pruned:
            book.object(now, obj.url, "terminated", "deleted", file=name)
        if pruned:
            self.harvest.count("object_versions_pruned", len(pruned))
