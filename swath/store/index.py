"""The store as the exporters' WARC index (exporters.warc_index.WarcIndex): WARCs the monitor recorded
from warc_created messages, so an export lists them with one query instead of scanning the data root."""

from __future__ import annotations

from pathlib import Path

from swath.core.paths import resolve_inside
from swath.store import Store, repo


class StoreWarcIndex:
    def __init__(self, *, store: Store, data_root: Path) -> None:
        self.store, self.data_root = store, data_root

    def _paths(self, collection_id: str | None) -> list[Path]:
        with self.store.session() as s:
            rows = repo.warcs_for_collection(s, collection_id)
        # paths in messages are confined to the data root like every other message path
        return sorted(resolve_inside(self.data_root, w.path) for w in rows)

    def warcs_for(self, collection_id: str) -> list[Path]:
        return self._paths(collection_id)

    def all_warcs(self) -> list[Path]:
        return self._paths(None)

    def add(self, collection_id: str, path: Path) -> None:
        """Recording is the monitor's job (it has the sha1, size and ids); nothing to do here."""
