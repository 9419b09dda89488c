"""Metadata backends (oai_pmh, dcat, ckan, opendatasoft): one row per current dataset or record.

`Datasets` reads one backend's records into the one dataset table; each backend's source, a subclass naming its
backend, is `exporter.py` in the backend's room (platforms/<name>/).

The backends write one `resource` record per item (WARC-Swath-Item-Type: dataset, JSON payload; see
docs/metadata-harvesting.md). The latest record per (source, id) wins and a deletion leaves the id out:
the export type is a current-state one, so records come newest first and deletions are tombstones.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, ClassVar

from swath.exporters.dates import iso_date
from swath.exporters.items import Doc, Item, Source
from swath.exporters.table import Col, Table, json_list
from swath.exporters.warc_reader import Response
from swath.harvesters.redaction import Redactor


def _tags(value: Iterable[object] | None) -> str | None:
    return ", ".join(str(t) for t in value) if value else None


def _count(value: object) -> int:
    return len(value) if isinstance(value, list) else 0


def _no_userinfo(url: object) -> object:
    """A seed URL without user:password@ or credential parameters (a seed's credential is no column value)."""
    return Redactor().url(url) if isinstance(url, str) else url


def _first_url(item: Item) -> str | None:
    for resource in item.item.get("resources") or ():
        if isinstance(resource, dict) and resource.get("url"):
            return resource["url"]
    return None


TABLE = Table(
    name="dataset",
    columns=(
        Col("id", "@id"),
        Col("title", "title"),
        Col("description", "description"),
        Col("tags", "tags", _tags),
        Col("frequency", "frequency"),
        Col("temporal_start", "temporal_coverage.start"),
        Col("temporal_end", "temporal_coverage.end"),
        Col("license", "license"),
        Col("created_at", "created_at"),
        Col("last_modified", "last_modified"),
        Col("url", "extras.uri"),
        Col("resources", "resources", _count),
        Col("first_resource_url", _first_url),
        Col("resources_json", "resources", json_list),
        Col("extras", "extras", json_list),  # backend-specific: oai:* and dc for OAI-PMH, ckan:name, ods:*
        Col("source_id", "$harvest.source_id"),
        Col("domain", "$harvest.domain"),
        Col("last_update", "$harvest.last_update"),
        Col("backend", "$harvest.backend"),
        Col("source_url", "$harvest.source_url", _no_userinfo),
    ),
    prepare=lambda item: item.context,  # "$harvest..." columns read the record's harvest metadata
)


class _Harvest:
    __slots__ = ("harvest",)

    def __init__(self, harvest: dict[str, Any]) -> None:
        self.harvest = harvest


class Datasets(Source):
    """Dataset records of one backend; a collection's records of other backends are not read."""

    table = TABLE
    backend: ClassVar[str]

    def reads(self, resp: Response) -> bool:
        # by the record's header where it has one: another backend's records are none of this type's
        return resp.item_type == "dataset" and resp.backend in (None, self.backend)

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        record = doc.value
        if not isinstance(record, dict) or not doc.whole:
            return
        harvest = record.get("harvest")
        if not isinstance(harvest, dict):
            harvest = {}
        if (harvest.get("backend") or self.backend) != self.backend or not record.get("id"):
            return
        rid, source_id = str(record["id"]), str(harvest.get("source_id") or "")
        dataset = record.get("dataset")
        deleted = record.get("status") == "deleted" or bool(record.get("deleted")) or not isinstance(dataset, dict)
        live = dataset if isinstance(dataset, dict) and not deleted else None  # None: a tombstone
        yield Item(
            type="dataset", id=rid, url=resp.url, item=live if live is not None else {}, harvest_date=resp.date,
            uid=source_id, date_text=None if live is None else live.get("last_modified"), parse_date=iso_date,
            raw=self.whole_raw(doc, want_raw), context=_Harvest(harvest), key=f"{source_id}\x00{rid}",
            deleted=deleted,
        )


