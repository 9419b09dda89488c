"""Xesam-PMH payloads (xesam_pmh): one row per live payload uri, `id` = the uri, the body's fields as columns.

Records are the crawler's `resource` records (docs/xesam.md). A full dump (a `cleanup` metadata record,
generation N) supersedes every payload of an earlier generation from that target; within the kept
generation the latest payload per (target, uri) wins and a deletion leaves the uri out.
The field names are only known from the payloads, so they are facts: read in the first pass, they make
the columns (in order of first appearance), after the fixed ones.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import orjson

from swath.exporters.dates import iso_date
from swath.exporters.items import Doc, Item, Source
from swath.exporters.table import Col, Table
from swath.exporters.warc_reader import Response
from swath.platforms.xesam.payload import RECORD_CONTENT_TYPE  # the harvester's records' type: one name for both

GENERATIONS = "xesam:generation"  # facts: target -> the generation of its latest full dump
FIELDS = "xesam:fields"  # facts: target -> generation -> field names in order of first appearance

FIXED = (
    Col("id", "@id"),
    Col("target", lambda item: item.key.partition("\x00")[0]),  # bus name + object path
    Col("timestamp", "timestamp"),
    Col("content_cat", "content_cat"),
    Col("source_cat", "source_cat"),
    Col("generation", "generation"),
    Col("harvest_id", "harvest_id"),
    Col("received", "received"),
)


def _target(body: dict[str, Any]) -> str:
    target = body.get("target")
    if not isinstance(target, dict):
        target = {}
    return f"{target.get('bus_name', '')}{target.get('path', '')}"


def _fields(item: Item) -> dict[str, str]:
    """name -> value; a name given more than once becomes a JSON list of its values, in order."""
    values: dict[str, list[str]] = {}
    for pair in item.item.get("fields") or ():
        if isinstance(pair, list) and len(pair) == 2:
            values.setdefault(str(pair[0]), []).append(pair[1])
    item.scratch = out = {k: v[0] if len(v) == 1 else orjson.dumps(v).decode() for k, v in values.items()}
    return out


def _field(name: str) -> Callable[[Item], object]:
    return lambda item: item.scratch.get(name)


def table_for(field_names: list[str]) -> Table:
    fixed = {c.name for c in FIXED}
    columns = [Col(name if name not in fixed else f"field:{name}", _field(name)) for name in field_names]
    return Table(name="xesam_payload", columns=(*FIXED, *columns), prepare=_fields)


class Xesam(Source):
    table = table_for([])
    has_facts = True

    def __init__(self) -> None:
        self.generations: dict[str, int] = {}

    @staticmethod
    def is_fact(uri: str, content_type: str) -> bool:
        return content_type.startswith(RECORD_CONTENT_TYPE)

    def collect(self, resp: Response, facts: dict[str, Any]) -> None:
        try:
            body = orjson.loads(resp.body)
        except orjson.JSONDecodeError:
            return
        if not isinstance(body, dict) or not isinstance(body.get("generation"), int):
            return
        target, generation = _target(body), body["generation"]
        if body.get("kind") == "cleanup":
            generations = facts.setdefault(GENERATIONS, {})
            generations[target] = max(generations.get(target, 0), generation)
        elif body.get("kind") == "payload":
            names = facts.setdefault(FIELDS, {}).setdefault(target, {}).setdefault(generation, [])
            for pair in body.get("fields") or ():
                if isinstance(pair, list) and len(pair) == 2 and pair[0] not in names:
                    names.append(str(pair[0]))

    def configure(self, facts: dict[str, Any]) -> None:
        self.generations = facts.get(GENERATIONS, {})
        names: list[str] = []
        for target, by_generation in facts.get(FIELDS, {}).items():
            kept = self.generations.get(target, 0)
            for generation, fields in sorted(by_generation.items()):
                if generation >= kept:
                    names.extend(n for n in fields if n not in names)
        self.table = table_for(names)

    def reads(self, resp: Response) -> bool:
        return resp.content_type.startswith(RECORD_CONTENT_TYPE)

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        body = doc.value
        if not isinstance(body, dict) or body.get("kind") != "payload" or not body.get("uri") or not doc.whole:
            return
        target = _target(body)
        if body.get("generation", 0) < self.generations.get(target, 0):
            return  # superseded by a later full dump of this target
        uri = str(body["uri"])
        yield Item(
            type="xesam_payload", id=uri, url=resp.url, item=body, harvest_date=resp.date,
            uid=(body.get("target") or {}).get("path"), date_text=body.get("timestamp"), parse_date=iso_date,
            raw=self.whole_raw(doc, want_raw), key=f"{target}\x00{uri}",
            deleted=bool(body.get("deleted")) or body.get("state") == 2,
        )
