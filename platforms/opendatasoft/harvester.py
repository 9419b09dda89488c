"""OpenDataSoft: the Explore API v2.1 catalog (`/api/explore/v2.1/catalog/datasets`), paged by offset."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar, Unpack
from urllib.parse import quote

from swath.harvesters.backends import Backend, BackendArgs, BackendHarvester, Item, Page
from swath.harvesters.mapping.dataset import Dataset, Resource, add_tags
from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.markdown import html_to_markdown
from swath.harvesters.mapping.vocab import guess_frequency, guess_license
from swath.platforms.opendatasoft.declaration import PLATFORM

API = "/api/explore/v2.1"
PAGE_SIZE = 100  # the Explore API's maximum `limit`
MAX_WINDOW = 10_000  # offset + limit may not exceed this; larger catalogs are read from exports/json
EXPORTS = {"csv": "text/csv", "json": "application/json", "xlsx": None}
GEO_EXPORTS = {"geojson": "application/geo+json", "shp": "application/zip"}




class OpenDataSoftBackend(Backend):
    """Options: where (ODSQL filter on the catalog)."""

    name = PLATFORM.name
    display_name = PLATFORM.title
    max_window: ClassVar[int] = MAX_WINDOW

    def __init__(self, **kwargs: Unpack[BackendArgs]) -> None:
        super().__init__(**kwargs)
        self.root = self.source.url.rstrip("/")

    def list_items(self) -> Iterator[Item | Page]:
        # an interrupted harvest goes on at the offset it had reached (the order is dataset_id's)
        offset, total = (self.resume if isinstance(self.resume, int) else 0), None
        where = self.source.options.get("where")
        while total is None or offset < total:
            if offset + PAGE_SIZE > self.max_window:
                yield from self._from_export(skip=offset)
                return
            params: dict[str, str | int | float | None] = {"limit": PAGE_SIZE, "offset": offset,
                                                           "order_by": "dataset_id"}
            if where:
                params["where"] = where
            body = self.fetch_json(f"{self.root}{API}/catalog/datasets", params=params)
            if not isinstance(body, dict) or not isinstance(body.get("results"), list):
                raise MetadataError("catalog/datasets answer has no `results` list")
            total = body.get("total_count") if isinstance(body.get("total_count"), int) else 0
            if not body["results"]:
                return
            for entry in body["results"]:
                yield self._item(entry, offset)
                offset += 1
            yield Page(offset)

    def _from_export(self, *, skip: int) -> Iterator[Item | Page]:
        """The whole catalog as one JSON array, past the paging window (same dataset_id order)."""
        params = {"order_by": "dataset_id"}
        if self.source.options.get("where"):
            params["where"] = self.source.options["where"]
        entries = self.fetch_json(f"{self.root}{API}/catalog/exports/json", params=params)
        if not isinstance(entries, list):
            raise MetadataError("catalog/exports/json is not a JSON array")
        for n, entry in enumerate(entries[skip:], skip):
            yield self._item(entry, n)
            if (n + 1) % PAGE_SIZE == 0:
                yield Page(n + 1)

    def _item(self, entry: object, n: int) -> Item:
        if not isinstance(entry, dict) or not entry.get("dataset_id"):
            return Item(remote_id=f"(catalog entry {n})", error="dataset without dataset_id", anonymous=True)
        dataset_id = entry["dataset_id"]
        public = self.source.public_url.rstrip("/")  # the URI kept in the WARC: no user:pass@
        return Item(remote_id=dataset_id, uri=f"{public}{API}/catalog/datasets/{quote(dataset_id)}", data=entry)

    def process(self, item: Item) -> Dataset | None:
        return map_dataset(item.data, root=self.root)


def _list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [v for v in (part.strip() for part in value.split(",")) if v]
    return [str(v) for v in value or [] if v]


def map_dataset(entry: dict[str, Any], *, root: str) -> Dataset:
    metas = (entry.get("metas") or {}).get("default") or {}
    dataset_id = entry["dataset_id"]
    base = f"{root}{API}/catalog/datasets/{quote(dataset_id)}"
    tags: list[str] = []
    add_tags(tags, _list(metas.get("keyword")))
    add_tags(tags, _list(metas.get("theme")))
    resources = []
    if entry.get("has_records", True):
        exports = dict(EXPORTS, **(GEO_EXPORTS if "geo" in (entry.get("features") or []) else {}))
        for fmt, mime in exports.items():
            resources.append(Resource(title=f"Export au format {fmt.upper()}", url=f"{base}/exports/{fmt}",
                                      format=fmt, mime=mime, last_modified=metas.get("data_processed")))
    for attachment in entry.get("attachments") or []:
        if isinstance(attachment, dict) and attachment.get("id"):
            resources.append(Resource(title=attachment.get("title") or attachment["id"],
                                      url=f"{base}/attachments/{quote(attachment['id'])}",
                                      mime=attachment.get("mimetype")))
    description = metas.get("description")
    dcat = (entry.get("metas") or {}).get("dcat") or {}
    return Dataset(
        remote_id=dataset_id,
        title=metas.get("title") or dataset_id,
        description=html_to_markdown(description) if description else None,
        tags=tags,
        frequency=guess_frequency(dcat.get("accrualperiodicity")),
        license=guess_license([metas.get("license_url") or "", metas.get("license") or ""]),
        last_modified=metas.get("modified"),
        resources=resources,
        extras={"ods:dataset_uid": entry.get("dataset_uid"), "ods:records_count": metas.get("records_count"),
                "uri": f"{root}/explore/dataset/{quote(dataset_id)}/", "dct:identifier": dataset_id},
    )


class OpenDataSoftHarvester(BackendHarvester, declaration=PLATFORM):
    backend = OpenDataSoftBackend
