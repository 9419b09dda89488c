"""The narrow contract between reading WARCs and writing exports (after sfm-utils' warc_iter).

A platform's Source turns one response record into Items: type, id, date, url, item, plus the
harvest date, the author/owner uid (for seed exports) and, when asked for, the raw JSON bytes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

import orjson

from swath.exporters.jsonspan import scan_spans
from swath.exporters.table import SHAPE_ERRORS, Table
from swath.exporters.warc_reader import Response

_UNSET: Any = object()


@dataclass(slots=True)
class Item:
    type: str  # the table it belongs to, e.g. "twitter_v2"
    id: str
    url: str  # the API URL it came from
    item: Any  # the parsed JSON object
    harvest_date: dt.datetime
    uid: str | None  # author / owner / blog: what a seed's uid matches
    date_text: Any  # the item's own date as the API wrote it; parsed on demand (only filters need it)
    parse_date: Callable[[Any], dt.datetime | None]
    raw: bytes | None = None  # byte-exact JSON as returned (only when the format needs it)
    context: Any = None  # page-level lookups shared by the items of one response (v2 includes)
    scratch: Any = None  # per-item values a table's prepare() computes once for several columns
    key: str | None = None  # dedupe key when the id alone is not unique (e.g. per harvest source)
    deleted: bool = False  # a tombstone: dedupe remembers the key, nothing is written
    _date: Any = _UNSET

    @property
    def date(self) -> dt.datetime | None:
        if self._date is _UNSET:
            try:
                self._date = self.parse_date(self.date_text) if self.date_text not in (None, "") else None
            except SHAPE_ERRORS:  # API JSON is untrusted: an odd date is no date
                self._date = None
        return self._date


@dataclass(slots=True)
class Doc:
    """One JSON document of a body: the whole body, or one line of a newline-delimited stream."""

    value: Any
    body: bytes  # the bytes `value` was parsed from
    whole: bool  # True if it was the whole body (page), False for one NDJSON line


class Source:
    """One platform's response shapes -> Items. Subclasses fill the hooks."""

    table: Table  # set by each subclass; configure() may give an instance its own (columns from facts)
    # Substrings of the URL that mark a response this source reads (checked in order, any matches).
    url_markers: ClassVar[tuple[str, ...]] = ()

    def accepts(self, url: str) -> bool:
        return any(marker in url for marker in self.url_markers)

    def reads(self, resp: Response) -> bool:
        """Whether this source reads the record (by URL unless a source looks at more)."""
        return self.accepts(resp.url)

    # Facts: records some sources must read before any item (a later full dump superseding earlier
    # payloads, the latest inventory of a node). They are read oldest first into one picklable dict,
    # which reaches every source (also in worker processes) through configure().
    has_facts: ClassVar[bool] = False

    @staticmethod
    def is_fact(uri: str, content_type: str) -> bool:
        return False

    def collect(self, resp: Response, facts: dict[str, Any]) -> None:
        """Add what a fact record says to `facts` (records come oldest first)."""

    def configure(self, facts: dict[str, Any]) -> None:
        """Called once with the facts before any item is read; may set `self.table` (columns from facts)."""

    def items(self, resp: Response, *, want_raw: bool, on_bad: Callable[[int], None]) -> Iterator[Item]:
        for doc in docs(resp.body, on_bad):
            yield from self.doc_items(doc, resp, want_raw)

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        raise NotImplementedError

    # Responses whose JSON repeated a key since the reader last took the count (RecordReader reports them).
    duplicate_keys: int = 0

    # helpers for subclasses
    def whole_raw(self, doc: Doc, want_raw: bool) -> bytes | None:
        """The doc's bytes as the raw item (None when not wanted); a doc repeating a key is written as it
        parsed, each key once with its last value, and counted."""
        if not want_raw:
            return None
        if orjson.dumps(doc.value) == doc.body or not scan_spans(doc.body, ()).duplicate_keys:
            return doc.body
        self.duplicate_keys += 1
        return orjson.dumps(doc.value)

    def raws(self, doc: Doc, path: tuple[str, ...], values: list[Any], want_raw: bool) -> list[bytes | None]:
        """Raw bytes of the values at `path` of the doc (Nones when not wanted). A repeated key counts
        as parsers read it: the last value; an item holding one is written as parsed (each key once)."""
        if not want_raw:
            return [None] * len(values)
        # Fast path: compact API JSON re-serialises to the same bytes; finding them in order in the
        # body proves it. Anything else (spaces, "\/" escapes) takes the exact token scan.
        out: list[bytes | None] = []
        pos = 0
        for value in values:
            candidate = orjson.dumps(value)
            found = doc.body.find(candidate, pos)
            if found < 0:
                break
            out.append(candidate)
            pos = found + len(candidate)
        else:
            return out
        # The scan finds objects and arrays; a scalar in the list (never an item) gets no bytes.
        spans = scan_spans(doc.body, path)
        containers = [n for n, v in enumerate(values) if isinstance(v, (dict, list))]
        if spans.duplicate_keys:
            self.duplicate_keys += 1
        if len(spans.spans) != len(containers):  # never write something that is not the item: write it as parsed
            return [orjson.dumps(v) if n in containers else None for n, v in enumerate(values)]
        raw: list[bytes | None] = [None] * len(values)
        for n, (start, end), repeated in zip(containers, spans.spans, spans.repeated):
            raw[n] = orjson.dumps(values[n]) if repeated else doc.body[start:end]
        return raw


# Reading untrusted API JSON: a value of the wrong type reads as absent, never as an exception.

_NO_OBJECT: dict[str, Any] = {}


def obj(value: Any) -> dict[str, Any]:
    """The value if it is a JSON object, else an empty one (read-only: shared)."""
    return value if type(value) is dict else _NO_OBJECT


def objs(values: Any) -> list[dict[str, Any]]:
    """The JSON objects of a list (anything else in it skipped); [] if it is not a list."""
    if type(values) is not list:
        return []
    for value in values:  # a plain loop: cheaper than all() over a generator for these short lists
        if type(value) is not dict:
            return [v for v in values if type(v) is dict]
    return values


def item_id(value: Any) -> str | None:
    """An item's id as text: API ids are strings or integers; anything else (or "") is no id."""
    if type(value) is str:
        return value or None
    if type(value) is int:
        return str(value)
    return None


def docs(body: bytes, on_bad: Callable[[int], None]) -> Iterator[Doc]:
    """The JSON documents of a body: one (a page) or many (NDJSON stream segments)."""
    stripped = body.strip()
    if not stripped:
        return
    try:
        yield Doc(orjson.loads(stripped), stripped, True)
        return
    except orjson.JSONDecodeError:
        pass
    bad = 0
    for line in stripped.split(b"\n"):
        line = line.strip()
        if not line:
            continue  # keep-alive newlines of a stream
        try:
            yield Doc(orjson.loads(line), line, False)
        except orjson.JSONDecodeError:
            bad += 1  # e.g. the last line of a stream cut by a WARC rotation or shutdown
    if bad:
        on_bad(bad)
