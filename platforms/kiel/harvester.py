"""Harvest type `kiel_archive`: renew AMF records and the objects their branches point to, as files.

A seed's `token` is a URL of an AMF file or a directory (inside the data root) of `*.xml` AMF files.
The archive lives under the message's `path` (`records/`, `etc/`; docs/kiel.md). Objects are fetched
through the harvest's recording session, so every exchange is in the WARC as well.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

from swath.core.paths import PathOutsideDataRoot, make_dirs_inside, read_inside, resolve_inside, write_atomic
from swath.harvesters.base import Harvester
from swath.harvesters.errors import HarvestError
from swath.harvesters.mapping.errors import MetadataError
from swath.messages import codes
from swath.messages.model import Seed
from swath.platforms.kiel.amf import AmfRecord, BadAmf, split_records
from swath.platforms.kiel.archive import Archive
from swath.platforms.kiel.branches import BadBranches, Branches, load_branches
from swath.platforms.kiel.declaration import PLATFORM
from swath.platforms.kiel.redist import REDISTS
from swath.platforms.kiel.renewal import Renewal
from swath.platforms.kiel.termination import BadTermination, Termination


class KielError(HarvestError):
    def __init__(self, code: str, message: str, *, seed_id: str | None = None) -> None:
        super().__init__(message, seed_id=seed_id)
        self.code = code


class KielHarvester(Harvester, declaration=PLATFORM):
    clock = staticmethod(time.time)

    def archive(self) -> None:
        harvest, opts = self.harvest, self.harvest.start.options
        redist = REDISTS.get(str(opts.get("redist", "nested")))
        if redist is None:
            raise KielError(codes.BAD_REQUEST, f"unknown redist {opts.get('redist')!r}; known: {', '.join(REDISTS)}")
        self.store = Archive(root=harvest.directory, redist=redist())
        self.branches = self._branches()
        self.termination = self._termination()
        renewal = Renewal(harvest=harvest, branches=self.branches, termination=self.termination, clock=self.clock)
        for seed in harvest.start.seeds:
            for record in self._records(seed):
                if harvest.stopping:
                    return
                try:
                    renewal.run(self.store.record(record.id), record)
                except PathOutsideDataRoot as exc:  # a symlink planted in the archive: skip, write nothing out
                    harvest.warning(codes.PATH_OUTSIDE_DATA_ROOT, f"record {record.id}: {exc.message}", seed.id)
                except MetadataError as exc:  # a stored version the safe parser refuses (edited on disk)
                    harvest.warning(codes.KIEL_BAD_RECORD, f"record {record.id}: {exc.message}", seed.id)

    def _inside(self, path: str) -> Path:
        try:
            return resolve_inside(self.harvest.config.data_root, path)
        except PathOutsideDataRoot as exc:
            raise KielError(codes.PATH_OUTSIDE_DATA_ROOT, str(exc)) from None

    def _branches(self) -> Branches:
        """The branches in use; an earlier, different version is kept as etc/branches_<tist>.xml."""
        given = self.harvest.start.options.get("branches")
        current = self.store.etc / "branches.xml"
        source = self._inside(given or str(current))  # etc/branches.xml too: a link there must not lead out
        try:
            branches = load_branches(source)
        except BadBranches as exc:
            raise KielError(codes.KIEL_BAD_BRANCHES, str(exc)) from None
        if given:
            try:
                etc = make_dirs_inside(self.store.root, self.store.etc)
                new = read_inside(self.harvest.config.data_root, source)
                if current.exists() and (old := read_inside(self.store.root, current)) != new:
                    write_atomic(etc / f"branches_{int(self.clock())}.xml", old)
                write_atomic(etc / "branches.xml", new)
            except PathOutsideDataRoot as exc:
                raise KielError(codes.PATH_OUTSIDE_DATA_ROOT, str(exc)) from None
        return branches

    def _termination(self) -> Termination | None:
        given = self.harvest.start.options.get("termination")
        default = self.store.etc / "termination.ini"
        if not given and not default.exists():
            return None
        path = self._inside(given or str(default))
        try:
            return Termination.load(path)
        except BadTermination as exc:
            self.harvest.warning(codes.KIEL_BAD_TERMINATION, str(exc))
            return None

    def _records(self, seed: Seed) -> Iterator[AmfRecord]:
        harvest, token = self.harvest, str(seed.token or "")
        if urlsplit(token).scheme in ("http", "https"):
            response = harvest.http.get(token)
            if response.status_code != 200:
                harvest.error(codes.TOKEN_NOT_FOUND, f"{token} answered {response.status_code}", seed.id)
                return
            sources: Iterable[tuple[str, bytes]] = [(token, response.content)]
        else:
            root = self._inside(token)
            files = [root] if root.is_file() else sorted(p for p in root.rglob("*.xml") if p.is_file())
            if not files:
                harvest.error(codes.TOKEN_NOT_FOUND, f"no AMF files (*.xml) at {token}", seed.id)
            sources = self._read_files(seed, root, files)
        for name, data in sources:
            try:
                records = list(split_records(data))
            except BadAmf as exc:
                harvest.warning(codes.KIEL_BAD_RECORD, f"{name}: {exc}", seed.id)
                continue
            yield from records

    def _read_files(self, seed: Seed, root: Path, files: list[Path]) -> Iterator[tuple[str, bytes]]:
        """(name, bytes) of the AMF files; a symlink among them leading out of the data root is skipped."""
        for path in files:
            name = str(path.relative_to(root.parent if root.is_file() else root))
            try:
                yield name, read_inside(self.harvest.config.data_root, path)
            except PathOutsideDataRoot as exc:
                self.harvest.warning(codes.PATH_OUTSIDE_DATA_ROOT, f"{name}: {exc.message}; not read", seed.id)
