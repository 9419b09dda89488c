"""META-SHARE resources (metashare_sync): one row per LR a node lists in its latest inventory.

LRs are not written to the WARC as items: the harvest records the node's answers, so this reads them
from the `response` records of GET /sync/<id>/metadata/ (a ZIP of metadata.xml + storage-global.json),
checked as the harvester checks them (a rejected copy is no copy). An LR is current when the latest
inventory (GET /sync/?sync_protocol=1.0, read as a fact) of the node it came from lists it; its row is
the latest copy whose checksum some inventory of that node listed (the copy the LR storage holds).
LRs only ever present in the storage (imported masters, copies made before the first harvest of the
collection) are not in the WARCs and so not exported.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import orjson
from lxml import etree

from swath.exporters.dates import iso_date
from swath.exporters.items import Item, Source
from swath.exporters.table import Col, Table
from swath.exporters.warc_reader import Response
from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.safexml import parse_xml
from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.protocol import (
    INVENTORY_JSON,
    LR_ENTRIES,
    METADATA_XML,
    STORAGE_GLOBAL_JSON,
    StorageGlobal,
    lr_checksum,
)
from swath.platforms.metashare.safezip import read_zip

INVENTORIES = "metashare:inventory"  # facts: node -> {id: checksum} of its latest inventory
LISTED = "metashare:listed"  # facts: node -> {"id checksum", ...} every inventory of it listed
_LR_URL = re.compile(r"\A(?P<node>.+)/sync/(?P<id>[0-9a-f]{64})/metadata/\Z")
_MAX_ZIP = 100 << 20  # as SWATH_MAX_RESPONSE_BYTES's default: the harvester refused anything larger


def _node_of_inventory(uri: str) -> str | None:
    node, sep, query = uri.partition("/sync/?")
    return node if sep and "sync_protocol=" in query else None


def _texts(root: etree._Element, name: str) -> list[str]:
    return [t.strip() for t in root.xpath(".//*[local-name()=$n]/text()", n=name) if t.strip()]


def _by_lang(root: etree._Element, path: str) -> str | None:
    """The English value of a multilingual element (else the first one)."""
    elements: list[etree._Element] = root.xpath(path)
    for element in elements:
        text = (element.text or "").strip()
        if str(element.get("lang", "")).lower().startswith("en") and text:
            return text
    return next(((e.text or "").strip() for e in elements if (e.text or "").strip()), None)


def _joined(values: list[str]) -> str | None:
    return "; ".join(dict.fromkeys(values)) or None  # distinct, in document order


_IDENT = "/*[local-name()='resourceInfo']/*[local-name()='identificationInfo']/*[local-name()='{}']"


def describe(root: etree._Element) -> dict[str, Any]:
    """The columns' values from metadata.xml (META-SHARE schema v2/v3, namespace ignored)."""
    ident = root.xpath("/*[local-name()='resourceInfo']/*[local-name()='identificationInfo']")
    ident = ident[0] if ident else root
    return {
        "resource_name": _by_lang(root, _IDENT.format("resourceName")),
        "short_name": _by_lang(root, _IDENT.format("resourceShortName")),
        "description": _by_lang(root, _IDENT.format("description")),
        "resource_type": _joined(_texts(root, "resourceType")),
        "media_types": _joined(_texts(root, "mediaType")),
        "languages": _joined(_texts(root, "languageName")),
        "availability": _joined(_texts(root, "availability")),
        "licences": _joined(_texts(root, "licence")),
        "identifiers": _joined(_texts(ident, "identifier")),
        "urls": _joined([t.strip() for t in ident.xpath("./*[local-name()='url']/text()") if t.strip()]),
        "metadata_created": _joined(_texts(root, "metadataCreationDate")),
    }


TABLE = Table(
    name="metashare_resource",
    columns=(
        Col("id", "@id"),
        Col("resource_name", "resource_name"),
        Col("short_name", "short_name"),
        Col("description", "description"),
        Col("resource_type", "resource_type"),
        Col("media_types", "media_types"),
        Col("languages", "languages"),
        Col("availability", "availability"),
        Col("licences", "licences"),
        Col("identifiers", "identifiers"),
        Col("urls", "urls"),
        Col("metadata_created", "metadata_created"),
        Col("revision", "storage.revision"),
        Col("publication_status", "storage.publication_status"),
        Col("created", "storage.created"),
        Col("modified", "storage.modified"),
        Col("source_url", "storage.source_url"),  # the node where the LR was created
        Col("metashare_version", "storage.metashare_version"),
        Col("node", "node"),  # the node it was harvested from (the seed's token)
        Col("checksum", "checksum"),
        Col("harvested_at", lambda item: item.harvest_date.isoformat()),
    ),
)


def _modified(value: object) -> dt.datetime:
    return iso_date(str(value).replace(" ", "T"))


class Metashare(Source):
    table = TABLE
    has_facts = True

    def __init__(self) -> None:
        self.inventories: dict[str, dict[str, str]] = {}
        self.listed: dict[str, set[str]] = {}

    @staticmethod
    def is_fact(uri: str, content_type: str) -> bool:
        return _node_of_inventory(uri) is not None

    def collect(self, resp: Response, facts: dict[str, Any]) -> None:
        node = _node_of_inventory(resp.url)
        try:
            files = read_zip(resp.body, expected=(INVENTORY_JSON,), max_bytes=_MAX_ZIP, what="inventory ZIP")
            inventory = json.loads(files[INVENTORY_JSON].decode("utf-8"))
        except (MetashareError, UnicodeDecodeError, ValueError, RecursionError):
            return  # the harvest failed on it too and synced nothing
        if node is None or not isinstance(inventory, dict):
            return
        inventory = {str(k): str(v) for k, v in inventory.items()}
        facts.setdefault(INVENTORIES, {})[node] = inventory  # records come oldest first: the last one stays
        facts.setdefault(LISTED, {}).setdefault(node, set()).update(f"{k} {v}" for k, v in inventory.items())

    def configure(self, facts: dict[str, Any]) -> None:
        self.inventories = facts.get(INVENTORIES, {})
        self.listed = facts.get(LISTED, {})

    def reads(self, resp: Response) -> bool:
        return resp.url.endswith("/metadata/") and "/sync/" in resp.url

    def items(self, resp: Response, *, want_raw: bool, on_bad: Callable[[int], None]) -> Iterator[Item]:
        match = _LR_URL.match(resp.url)
        if match is None:
            return
        node, identifier = match["node"], match["id"]
        inventory = self.inventories.get(node)
        if inventory is not None and identifier not in inventory:
            return  # no longer listed by its node: deleted from the storage at that sync
        try:
            files = read_zip(resp.body, expected=LR_ENTRIES, max_bytes=_MAX_ZIP, what=f"LR {identifier} ZIP")
            checksum = lr_checksum(files[METADATA_XML], files[STORAGE_GLOBAL_JSON])
            storage = StorageGlobal.from_json(files[STORAGE_GLOBAL_JSON])
            root = parse_xml(files[METADATA_XML])
        except (MetashareError, MetadataError):
            return  # rejected by the harvester as well (a 404 page, a hostile ZIP, an invalid LR)
        if storage.identifier != identifier or (node in self.listed and f"{identifier} {checksum}" not in
                                                 self.listed[node]):
            return  # rejected by the harvester: another id, or not the checksum the inventory gave
        values = describe(root)
        values.update(storage=json.loads(files[STORAGE_GLOBAL_JSON]), node=node, checksum=checksum)
        raw = orjson.dumps({"id": identifier, "node": node, "storage": values["storage"],
                            "metadata_xml": files[METADATA_XML].decode("utf-8")}) if want_raw else None
        yield Item(
            type="metashare_resource", id=identifier, url=resp.url, item=values, harvest_date=resp.date,
            uid=None, date_text=storage.modified, parse_date=_modified, raw=raw, key=f"{node}\x00{identifier}",
            deleted=storage.deleted,
        )
