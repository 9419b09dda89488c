"""Deleting for good: a deleted collection (source) goes with its WARCs (files and index rows), its exports
(files and rows) and, once it has no collection left, its deleted collection set. One code path for
`swath harvest purge` (all deleted sources, or `--expired`: those past their retention), the scheduler's
expiry and the web's delete / purge-now (docs/web.md "Delete, retain, purge").

Files are removed only inside the harvest / export root and never through a link: a path with a symlink on
the way, or one resolving outside the root, is skipped and named in `skipped`. A WARC in object storage (an
s3:// path) is deleted from the configured store, and only from it (a URL naming another bucket or prefix is
skipped); its copy in the replica (SWATH_STORAGE_REPLICA_URL) goes with it, as does a local WARC's. A store that
fails, or is not configured in this process, stops the purge (StorageUnavailable/StorageRefused) with the rows
kept, so running it again finishes it.
"""

from __future__ import annotations

import datetime as dt
import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.core.objects import ObjectStore, StorageRefused, storage_target, store_for
from swath.core.paths import PathOutsideDataRoot, export_path
from swath.core.warc_files import PathOutsideStore, is_object_url, key_in
from swath.harvesters.retry import storage_retry
from swath.store import repo
from swath.store.models import Export, Source, Warc, WarcSeed, utcnow
from swath.store.web_models import CollectionSet, ExportRequest


@dataclass
class Purged:
    """What a purge removed: source names, counts, the bytes of the files unlinked, and what it left alone."""

    names: list[str] = field(default_factory=list)
    warcs: int = 0
    exports: int = 0
    bytes_freed: int = 0
    skipped: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {"purged": self.names, "warcs": self.warcs, "exports": self.exports,
                "bytes_freed": self.bytes_freed, "skipped": self.skipped}

    def text(self) -> str:
        return (f"purged {len(self.names)} source(s)" + (f": {', '.join(self.names)}" if self.names else "")
                + f"; {self.warcs} WARC(s), {self.exports} export(s), {self.bytes_freed} bytes freed"
                + (f"; skipped (link or outside the root): {', '.join(self.skipped)}" if self.skipped else ""))


def retention_end(config: Config, now: dt.datetime | None = None) -> dt.datetime:
    """When a collection deleted now is purged by the expiry."""
    return (now or utcnow()) + dt.timedelta(days=config.purge_after_days)


def mark_deleted(s: Session, source: Source, *, purge_after: dt.datetime) -> None:
    """Delete (not only deactivate) `source`: never scheduled again, purged after `purge_after`."""
    if source.deleted_at is None:
        repo.soft_delete(s, source)
    source.next_due, source.purge_after = None, purge_after


def purge_sources(s: Session, config: Config, *, ids: Iterable[str] | None = None,
                  expired_at: dt.datetime | None = None) -> Purged:
    """Purge deleted sources: all, those of `ids`, or (with `expired_at`) those whose retention ended by then."""
    query = select(Source).where(Source.deleted_at.is_not(None))
    if ids is not None:
        query = query.where(Source.id.in_(list(ids)))
    if expired_at is not None:
        query = query.where(Source.purge_after.is_not(None), Source.purge_after <= expired_at)
    sources = list(s.scalars(query))
    out = Purged()
    for source in sources:
        _purge_warcs(s, config, source, out)
        for export in exports_of(s, source):
            remove_export(s, config, export, out)
    out.names = repo.purge(s, [src.id for src in sources])
    expired_sets = set() if expired_at is None else set(s.scalars(select(CollectionSet.id).where(
        CollectionSet.purge_after.is_not(None), CollectionSet.purge_after <= expired_at)))
    _drop_emptied_sets(s, {src.collection_set_id for src in sources} | expired_sets)
    return out


def exports_of(s: Session, source: Source) -> list[Export]:
    return list(s.scalars(select(Export).join(ExportRequest, ExportRequest.export_id == Export.id)
                          .where(ExportRequest.source_id == source.id)))


def remove_export(s: Session, config: Config, export: Export, out: Purged) -> None:
    """An export's files (its folder inside the export root's exports/) and its rows."""
    folder = export_folder(config, export.path)
    if folder is not None and folder.is_dir() and not folder.is_symlink():
        for entry in sorted(folder.iterdir()):
            _unlink(entry, out)
        _rmdir_if_empty(folder)
    elif export.path:
        out.skipped.append(export.path)
    s.execute(delete(ExportRequest).where(ExportRequest.export_id == export.id))
    s.execute(delete(Export).where(Export.id == export.id))
    out.exports += 1


def export_folder(config: Config, path: str | None) -> Path | None:
    """The real folder of an export's `path`, if it is a folder below the export root's exports/; else None."""
    try:
        folder = export_path(config, path or "")
    except PathOutsideDataRoot:
        return None
    exports = (config.export_base / "exports").resolve()
    return folder if folder.is_relative_to(exports) and folder != exports else None


def _purge_warcs(s: Session, config: Config, source: Source, out: Purged) -> None:
    rows = list(s.scalars(select(Warc).where(Warc.collection_set_id == source.collection_set_id,
                                             Warc.collection_id == source.collection_id)))
    stores = _Stores(config)
    keys = {row.id: stores.key(row.path) for row in rows if is_object_url(row.path)}  # refused before any delete
    for row in rows:
        if is_object_url(row.path):
            key = keys[row.id]
            if key is None:
                out.skipped.append(row.path)
                continue
            stores.delete(key)
            out.bytes_freed += row.bytes
            continue
        path = _inside(config.harvest_base, row.rel_path or row.path)
        if path is None:
            out.skipped.append(row.path)
            continue
        if path.exists():
            _unlink(path, out)
        if row.rel_path and config.storage_replica_url:  # a local WARC's replica copy is keyed by its rel path
            stores.delete(row.rel_path, primary=False)
    ids = [row.id for row in rows]
    if ids:  # explicit: SQLite cascades only with its foreign_keys pragma
        s.execute(delete(WarcSeed).where(WarcSeed.warc_id.in_(ids)))
        s.execute(delete(Warc).where(Warc.id.in_(ids)))
    out.warcs += len(ids)


class _Stores:
    """The primary store and the replica, made when a WARC needs them (a purge of local files needs neither)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._made: dict[bool, ObjectStore] = {}

    def key(self, url: str) -> str | None:
        """The key of the s3:// `url` in the configured store; None when it is not that store's (never deleted).
        No store configured at all (a process started without SWATH_STORAGE_URL) refuses: the rows are kept."""
        target = storage_target(self.config)
        if target is None:
            raise StorageRefused(f"{url} is in object storage, but SWATH_STORAGE_URL is not set here; nothing "
                                 "purged (set it as the workers have it and purge again)")
        try:
            return key_in(target, url)
        except PathOutsideStore:
            return None

    def delete(self, key: str, *, primary: bool = True) -> None:
        """`key` deleted from the primary (if `primary`) and the replica, when one is configured."""
        for replica in ((False,) if primary else ()) + ((True,) if self.config.storage_replica_url else ()):
            if replica not in self._made:
                self._made[replica] = store_for(self.config, retry=storage_retry(self.config), replica=replica)
            self._made[replica].delete(key)


def _inside(root: Path, path: str) -> Path | None:
    """`path` (absolute or from `root`) if it lies inside `root` with no symlink on the way below the root."""
    raw = Path(os.path.normpath(path))
    for base in (Path(os.path.realpath(root)), Path(os.path.normpath(os.path.abspath(root)))):
        candidate = raw if raw.is_absolute() else base / raw
        if candidate.is_relative_to(base):
            below = candidate.relative_to(base).parts
            links = [p for p in (base.joinpath(*below[:n]) for n in range(1, len(below) + 1)) if p.is_symlink()]
            return None if links or ".." in below else Path(os.path.realpath(base)).joinpath(*below)
    return None


def _unlink(path: Path, out: Purged) -> None:
    """Remove a regular file (its bytes counted) or a link itself (never what it points to); folders stay."""
    info = os.lstat(path)
    if stat.S_ISDIR(info.st_mode):
        out.skipped.append(str(path))
        return
    os.unlink(path)
    if stat.S_ISREG(info.st_mode):
        out.bytes_freed += info.st_size


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # something left in it (a sub-folder): kept


def _drop_emptied_sets(s: Session, set_ids: set[str]) -> None:
    """A deleted collection set goes once none of its collections is left (its change history stays)."""
    for cs in s.scalars(select(CollectionSet).where(CollectionSet.id.in_(set_ids),
                                                    CollectionSet.purge_after.is_not(None))):
        if s.scalar(select(Source.id).where(Source.collection_set_id == cs.id).limit(1)) is None:
            s.delete(cs)


def purge_expired(s: Session, config: Config, now: dt.datetime | None = None) -> Purged:
    """The retention expiry: every deleted source whose purge time has come."""
    return purge_sources(s, config, expired_at=now or utcnow())
