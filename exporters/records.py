"""What an export's records become: encoded export lines (RecordReader -> Batches), read by a Plan.

Which records and in what order (the Plan itself) is planning.py's. Records are read by reference (file, offset),
so the same RecordReader runs in this process or in the reader processes of reader.py; what it gives back is a
Batch, in the order of the references. No process of its own here.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

import orjson

from swath.core.warc_files import open_warc
from swath.exporters import registry
from swath.exporters.dedupe import dedupe_key
from swath.exporters.items import Item, Source
from swath.exporters.warc_reader import IsFact, RecordRef, Response, read_at
from swath.exporters.writers import FORMATS

MAX_OPEN_FILES = 16

# What an item becomes for its format: bytes (CSV, TSV, JSON, ids) or an XLSX row of cells.
Payload = bytes | list[Any]
# (item, its row or None when the format needs none) -> its payload; writers.Writer.encoder makes them.
Encode = Callable[[Item, "list[Any] | None"], Payload]


class Format(Protocol):
    """What reading needs of an export format; the writers.Writer classes in FORMATS are these."""

    @property
    def needs_row(self) -> bool: ...

    @property
    def needs_raw(self) -> bool: ...

    def encoder(self, headers: list[str]) -> Encode: ...


@dataclass(frozen=True)
class Plan:
    """What to read and how to encode it; picklable, sent once to each reader process."""

    type: str
    format: str
    uids: frozenset[str] | None = None
    item_date_start: dt.datetime | None = None
    item_date_end: dt.datetime | None = None
    newest_first: bool = False  # dedupe: items of a record in reverse, records newest first
    facts: dict[str, Any] = field(default_factory=dict)  # what fact records said (see items.Source)


@dataclass
class Unreadable:
    """One WARC's bodies and stream lines that could not be read: how many, and where the first one is."""

    items: int = 0  # bodies (a content coding that does not decode, not JSON) and stream lines (not JSON)
    first: str = ""  # the first one's record offset, URL and reason
    cut: int = 0  # streams' last lines cut short (the connection or harvest ended mid-item): a warning only

    def add(self, other: Unreadable) -> None:
        self.items += other.items
        self.cut += other.cut
        self.first = self.first or other.first


@dataclass
class Tally:
    """What reading met besides the rows, so an export that wrote nothing can say why (base.Report)."""

    matched: int = 0  # records one of the type's sources reads (2xx responses and resource records)
    seen: int = 0  # items in them, before the filters (tombstones included)
    by_uid: int = 0  # left out: not by one of the seeds' uids
    by_date: int = 0  # left out: outside the item dates, or no date while a date filter is set
    tombstones: int = 0  # deletions (current-state types)
    errors: int = 0  # HTTP answers of the type's URLs with a status other than 2xx: read for no items

    def add(self, other: Tally) -> None:
        self.matched += other.matched
        self.seen += other.seen
        self.by_uid += other.by_uid
        self.by_date += other.by_date
        self.tombstones += other.tombstones
        self.errors += other.errors


@dataclass
class Batch:
    """What a chunk of records gave, in export order: per item its table, dedupe key (when deduping) and
    encoded payload (None: a tombstone), and unreadable lines. Kept as columns so a batch crosses
    processes as a few lists, and the writing process can take a whole batch in one step."""

    tables: list[str] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    payloads: list[Payload | None] = field(default_factory=list)
    tombstones: int = 0
    unreadable: dict[str, Unreadable] = field(default_factory=dict)  # per WARC
    duplicate_keys: dict[str, int] = field(default_factory=dict)  # per WARC: responses that repeated a JSON key
    records: int = 0
    tally: Tally = field(default_factory=Tally)

    @property
    def table(self) -> str | None:
        """The table of every item, if they share one (the usual case)."""
        tables = self.tables
        return tables[0] if tables and tables.count(tables[0]) == len(tables) else None


def _unreadable(batch: Batch, warc: str, *, items: int = 0, cut: int = 0, where: str = "") -> None:
    batch.unreadable.setdefault(warc, Unreadable()).add(Unreadable(items=items, first=where if items else "", cut=cut))


def _note_bad(batch: Batch, ref: RecordRef, resp: Response, *, bad: int, items: int) -> None:
    """Count a body's unreadable lines: one for a body whose coding did not decode (its bytes are no lines),
    a stream's cut last line apart."""
    where = f"record at offset {ref.offset} ({resp.url})"
    if resp.unreadable is not None:  # a body stored decoded under a stale header still reads: only now is it bad
        _unreadable(batch, ref.warc, items=1, where=f"{where}: {resp.unreadable}")
        return
    cut = 1 if _cut_tail(resp) else 0
    why = f"{bad - cut} line(s) of its body are not JSON" if items or cut else "its body is not JSON"
    _unreadable(batch, ref.warc, items=bad - cut, cut=cut, where=f"{where}: {why}")


def _cut_tail(resp: Response) -> bool:
    """Whether a body's unreadable last line is an item cut short (a stream that ended mid-line, or a line
    the harvester kept only part of) rather than an unreadable item: it ends the body without a line end,
    after other lines or in a record marked WARC-Truncated or a stream segment (only a connection's last
    segment lacks a line end: a stop just after a rotation leaves it the cut line alone)."""
    body = resp.body
    if body.endswith((b"\n", b"\r")):
        return False
    head, _, last = body.rpartition(b"\n")
    if not last.strip() or not (resp.truncated or resp.segment or head.strip()):
        return False
    try:
        orjson.loads(last)
    except orjson.JSONDecodeError:
        return True
    return False


def sources_for(export_type: str, facts: dict[str, Any]) -> list[Source]:
    """The item sources of an export type, configured with what its fact records said."""
    sources = [cls() for cls in registry.lookup(export_type).sources]
    for source in sources:
        source.configure(facts)
    return sources


def fact_test(export_type: str) -> IsFact | None:
    """Whether a record (by URI and content type) is a fact of this export type; None if it has none."""
    classes = [c for c in registry.lookup(export_type).sources if c.has_facts]
    if not classes:
        return None
    return lambda uri, content_type: any(c.is_fact(uri, content_type) for c in classes)


def ignore_cut(warc: str, message: str) -> None:
    """The scan that made the refs already reported any cut, so no second warning (planning.py's reads too)."""


class RecordReader:
    """Reads chunks of records into Batches; keeps a few WARCs open between chunks (close() them)."""

    def __init__(self, plan: Plan, *, formats: Mapping[str, Format] = FORMATS) -> None:
        self.plan = plan
        self.sources: list[Source] = sources_for(plan.type, plan.facts)
        fmt = formats[plan.format]
        self.want_raw = fmt.needs_raw
        self.tables = {s.table.name: s.table for s in self.sources}
        # per table: its encoder and row function (None when the format needs no columns)
        self._by_type: dict[str, tuple[Encode, Callable[[Any], list[Any]] | None]] = {
            name: (fmt.encoder(t.headers), t.row if fmt.needs_row else None) for name, t in self.tables.items()
        }
        self._files: collections.OrderedDict[str, IO[bytes]] = collections.OrderedDict()

    def _open(self, path: str) -> IO[bytes]:
        fh = self._files.get(path)
        if fh is None:
            if len(self._files) >= MAX_OPEN_FILES:
                self._files.popitem(last=False)[1].close()
            fh = self._files[path] = open_warc(path)  # kept open across chunks: close()
        else:
            self._files.move_to_end(path)
        return fh

    def close(self) -> None:
        for fh in self._files.values():
            fh.close()
        self._files.clear()

    def read(self, refs: list[RecordRef]) -> Batch:
        plan, batch = self.plan, Batch()
        uids, start, end = plan.uids, plan.item_date_start, plan.item_date_end
        tables, keys, payloads = batch.tables, batch.keys, batch.payloads
        dedupe = plan.newest_first
        by_type = self._by_type
        tally = batch.tally
        for ref in refs:
            resp = read_at(self._open(ref.warc), ref, on_truncated=ignore_cut)
            batch.records += 1
            if resp is None:
                continue
            source = next((s for s in self.sources if s.reads(resp)), None)
            if source is None:
                continue  # another type's record
            if resp.status is not None and not 200 <= resp.status < 300:
                tally.errors += 1  # an API error answer (the harvest reported it): no items
                continue
            tally.matched += 1
            bad = 0

            def on_bad(n: int) -> None:
                nonlocal bad
                bad += n

            items = list(source.items(resp, want_raw=self.want_raw, on_bad=on_bad))
            if bad:
                _note_bad(batch, ref, resp, bad=bad, items=len(items))
            if source.duplicate_keys:
                batch.duplicate_keys[ref.warc] = batch.duplicate_keys.get(ref.warc, 0) + source.duplicate_keys
                source.duplicate_keys = 0
            if dedupe:
                items.reverse()  # the first copy dedupe meets is then the latest harvested one
            tally.seen += len(items)
            for item in items:
                payload: Payload | None
                if item.deleted:  # tombstones skip the filters: they must reach dedupe whatever they say
                    payload = None
                    batch.tombstones += 1
                    tally.tombstones += 1
                else:
                    if uids is not None and item.uid not in uids:
                        tally.by_uid += 1
                        continue
                    if start is not None or end is not None:
                        date = item.date
                        if date is None or (start is not None and date < start) or (end is not None and date > end):
                            tally.by_date += 1
                            continue
                    encode, row = by_type[item.type]
                    payload = encode(item, row(item) if row is not None else None)
                tables.append(item.type)
                payloads.append(payload)
                if dedupe:
                    keys.append(dedupe_key(item.key or item.id))
        return batch
