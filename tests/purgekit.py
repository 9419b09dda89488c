"""Helpers for the delete/retain/purge tests (no tests here): a collection's WARCs and exports put on disk and
recorded through the monitor's own store functions, as a harvest and an export would leave them."""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from swath.core.config import Config
from swath.messages.model import WarcCreated
from swath.monitor import record_warc_created
from swath.store import Store, monitor_repo, repo, web_repo
from swath.store.models import SUCCESS, Source


def warcs_on_disk(config: Config, store: Store, source_id: str, blobs: list[bytes]) -> list[Path]:
    """One WARC file per blob in the collection's folder, each announced by a warc_created; their paths."""
    paths = []
    with store.session() as s:
        src = s.get(Source, source_id)
        folder = config.data_root / "collections" / src.collection_set_id / src.collection_id / "2026" / "11"
        folder.mkdir(parents=True, exist_ok=True)
        for n, blob in enumerate(blobs):
            path = folder / f"{src.collection_id}-{n}.warc.gz"
            path.write_bytes(blob)
            record_warc_created(s, WarcCreated(
                path=str(path), sha1="0" * 40, bytes=len(blob), warc_id=f"w-{source_id}-{n}",
                date_created="2026-11-20T10:00:00+00:00", collection_set_id=src.collection_set_id,
                collection_id=src.collection_id, harvest_id=f"run-{source_id}", harvest_type="oai_pmh"),
                data_root=config.data_root)
            paths.append(path)
    return paths


def planted_link(config: Config, store: Store, source_id: str, target: Path) -> Path:
    """A "WARC" of the collection that is a symlink to `target` (outside the data root), in the index."""
    with store.session() as s:
        src = s.get(Source, source_id)
        link = config.data_root / "collections" / src.collection_set_id / src.collection_id / "planted.warc.gz"
        os.symlink(target, link)
        record_warc_created(s, WarcCreated(
            path=str(link), sha1="0" * 40, bytes=target.stat().st_size, warc_id=f"w-{source_id}-link",
            date_created="2026-11-20T10:00:00+00:00", collection_set_id=src.collection_set_id,
            collection_id=src.collection_id, harvest_id=f"run-{source_id}", harvest_type="oai_pmh"),
            data_root=config.data_root)
    return link


def export_on_disk(config: Config, store: Store, source_id: str, export_id: str, files: dict[str, bytes],
                   *, user: str = "ada") -> list[Path]:
    """A finished export of the collection asked for in the web (its files written, its status recorded)."""
    folder = config.data_root / "exports" / export_id
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    with store.session() as s:
        src = s.get(Source, source_id)
        repo.add_export(s, export_id=export_id, export_type="oai_pmh", fmt="csv", path=f"exports/{export_id}",
                        collection_id=src.collection_id)
        web_repo.add_export_request(s, export_id=export_id, set_id=src.collection_set_id, source_id=src.id,
                                    user=user)
        now = dt.datetime.now(dt.UTC).isoformat()
        body = {"id": export_id, "status": SUCCESS, "date_started": now, "date_ended": now, "infos": [],
                "warnings": [], "errors": []}
        monitor_repo.record_export_status(s, body, routing_key="export.status.oai_pmh")
    return [folder / name for name in files]
