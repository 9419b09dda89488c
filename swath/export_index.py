"""Exports that read only what they select: the store's WARC index (kept by the monitor from warc_created,
store/warc_index.py) handed to the export job through the exporters' WarcIndex Protocol.

The index names the WARCs of a collection or of seeds, within the harvest dates, so an export's cost
follows what it selects, not the size of the archive. It hands back to the listing of the data root
(exporters.warc_index.ScanIndex), and says so in the export status (warc_index_scan), when there is no
store, or the store cannot be read (warc_index_unavailable), or it holds no WARC of the selection (SFM's
WARCs, or WARCs harvested before a monitor ran). WARCs in a selected collection's folders that the index
does not hold are read too (warc_unindexed); an indexed WARC gone from disk is a warc_missing warning.
"""

from __future__ import annotations

import functools
import os
import threading
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.core.jsontypes import JSONObject
from swath.core.objects import StorageTarget, storage_target
from swath.core.paths import PathOutsideDataRoot, resolve_inside
from swath.core.warc_files import PathOutsideStore, is_object_url, key_in
from swath.exporters import base
from swath.exporters.wacz import of_harvests
from swath.exporters.warc_index import ListingAnswers, Selected, is_warc
from swath.messages import codes
from swath.messages.model import ExportStart
from swath.sfm_index import SfmApiIndex
from swath.store import Store, StoreError
from swath.store.dberrors import classify
from swath.store.warc_index import IndexedWarc, indexed_in, relative_path, select_indexed

_stores: dict[str, Store] = {}  # one engine per URL for the life of the worker
_lock = threading.Lock()


class StoreIndex(ListingAnswers):
    """A WarcIndex over the store's `warcs` table; `store=None` (with `why`): there is none to ask."""

    def __init__(self, *, store: Store | None, data_root: Path, why: str = "", why_code: str = "",
                 objects: StorageTarget | None = None) -> None:
        self.store = store
        self.objects = objects  # the object store s3:// WARC paths must be in (SWATH_STORAGE_URL)
        self.root = Path(os.path.realpath(data_root))
        self.why = why or "the WARC index is not available"
        self.why_code = why_code or codes.WARC_INDEX_SCAN

    def select(self, start: ExportStart) -> Selected:
        if self.store is None:
            return self._listed(start, self.why, code=self.why_code)
        ask = functools.partial(select_indexed, collection_id=start.collection_id,
                                seeds={(seed.id, seed.uid) for seed in start.seeds})
        try:
            with self.store.session() as s:
                rows = ask(s, date_start=start.harvest_date_start, date_end=start.harvest_date_end)
                undated = rows or ask(s, date_start=None, date_end=None)
                known = indexed_in(s, {r.collection_id for r in rows}) if rows else []
        except SQLAlchemyError as exc:
            _, line = classify(exc)
            return self._listed(start, f"the WARC index in the store could not be read ({line}; an older store "
                                "gets the index when the monitor next starts)", code=codes.WARC_INDEX_UNAVAILABLE)
        if not undated:
            what = f"collection {start.collection_id}" if start.collection_id else "these seeds"
            return self._listed(start, f"the WARC index holds no WARC of {what} (harvested by SFM or before "
                                "the monitor ran?)", code=codes.WARC_INDEX_SCAN)
        warnings: list[tuple[str, str]] = []
        resolved = [(row, self._path(row, warnings)) for row in rows]
        warcs: set[Path | str] = {path for _, path in resolved if path is not None}
        folders = {folder for row, path in resolved
                   if isinstance(path, Path) and (folder := self._collection_folder(path, row.collection_id))}
        unindexed = self._unindexed(folders, known)
        infos: list[tuple[str, str]] = []
        if unindexed:
            warcs.update(unindexed)
            infos.append((codes.WARC_UNINDEXED, f"{len(unindexed)} WARC(s) in the folders of the selected collections "
                          f"have no entry in the WARC index (first: {min(unindexed)}); read them too"))
        return Selected(sorted(warcs, key=str), infos=infos, warnings=warnings, outside_dates=len(undated) - len(rows))

    def _listed(self, start: ExportStart, why: str, *, code: str) -> Selected:
        listed = self.scan.select(start, why=why)
        if code == codes.WARC_INDEX_SCAN:
            return listed
        return Selected(listed.warcs, warnings=[(code, message) for _, message in listed.infos])

    def _path(self, row: IndexedWarc, warnings: list[tuple[str, str]]) -> Path | str | None:
        """Where the WARC is under this data root: by its path from the root, else as announced (checked); an
        object's URL when it is in the configured store (read by ranged GETs: core/warc_files.py)."""
        if is_object_url(row.path):
            try:
                if self.objects is None:
                    raise PathOutsideStore(f"the WARC index names {row.path}, but no object store is configured "
                                           "(SWATH_STORAGE_URL); not read")
                key_in(self.objects, row.path)
            except PathOutsideStore as exc:
                warnings.append((exc.code, exc.message))
                return None
            return row.path
        try:
            return resolve_inside(self.root, row.rel_path if row.rel_path else row.path)
        except PathOutsideDataRoot:
            warnings.append((codes.PATH_OUTSIDE_DATA_ROOT, f"the WARC index names {row.path}, outside the data "
                             f"root {self.root}; not read (was the data root moved? rerun the monitor there)"))
            return None

    def _unindexed(self, folders: set[Path], known: list[IndexedWarc]) -> set[Path]:
        """WARC files in the selected WARCs' collection folders that the index does not hold (compared by their
        path from the data root: resolving every entry of a big collection would cost what the index saves)."""
        indexed = {os.path.normpath(k.rel_path) if k.rel_path else relative_path(k.path, self.root) for k in known}
        found: set[Path] = set()
        for folder in folders:
            for top, dirs, files in os.walk(folder):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                here = Path(top)
                found.update(here / name for name in files
                             if is_warc(name) and str((here / name).relative_to(self.root)) not in indexed)
        return found

    def _collection_folder(self, path: Path, collection_id: str) -> Path | None:
        """The nearest folder above the WARC named by its collection id (the harvest path ends in it)."""
        for folder in path.parents:
            if folder == self.root or self.root not in folder.parents:
                return None
            if folder.name == collection_id:
                return folder
        return None


def store_index(config: Config) -> StoreIndex:
    """The index in the store at SWATH_DB_URL; a default SQLite store that was never made is no index."""
    url = make_url(config.db_url)
    if url.get_backend_name() == "sqlite" and url.database and not Path(url.database).is_file():
        return StoreIndex(store=None, data_root=config.harvest_base,
                          why=f"no store at {url.database} holds a WARC index (no monitor recorded warc_created)")
    try:
        with _lock:
            store = _stores.get(config.db_url)
            if store is None:  # the monitor and the CLI migrate the store; an exporter only reads it
                store = _stores[config.db_url] = Store(url=config.db_url, migrate=False)
    except StoreError as exc:
        return StoreIndex(store=None, data_root=config.harvest_base, why=f"the WARC index is unavailable: {exc}",
                          why_code=codes.WARC_INDEX_UNAVAILABLE)
    return StoreIndex(store=store, data_root=config.harvest_base, objects=storage_target(config))


def indexed_warcs(config: Config, store: Store, collection_id: str, *,
                  harvest_ids: tuple[str, ...] = ()) -> tuple[list[Path | str], list[tuple[str, str]]]:
    """Every WARC the index holds of a collection (with `harvest_ids`, only those harvests' files: their names
    start with the harvest id), in path order: local paths checked inside the data root, s3:// URLs inside the
    configured store; and (code, message) for each one refused."""
    with store.session() as s:
        rows = indexed_in(s, {collection_id})
    ours = of_harvests(harvest_ids)
    index = StoreIndex(store=None, data_root=config.harvest_base, objects=storage_target(config))
    refused: list[tuple[str, str]] = []
    found = [path for row in rows
             if ours(row.path.rsplit("/", 1)[-1])
             if (path := index._path(row, refused)) is not None]
    return sorted(found, key=str), refused


def run_export(body: JSONObject, *, routing_key: str, ctx: JobContext, workers: int | None = None) -> None:
    """The exporter workers' job: exporters.base.run_export on sfm-ui's WARC list (SWATH_SFM_API_URL), else on
    the store's WARC index."""
    index = SfmApiIndex(config=ctx.config) if ctx.config.sfm_api_url else store_index(ctx.config)
    base.run_export(body, routing_key=routing_key, ctx=ctx, index=index, workers=workers)
