"""From WARC records to encoded export lines: the CPU-heavy half of an export, with no process of its own.

Records are read by reference (file, offset), so the same RecordReader runs in this process or in the
reader processes of reader.py; what it gives back is a Batch, in the order of the references.
"""

from __future__ import annotations

import collections
import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, Any, Protocol

from swath.exporters import registry
from swath.exporters.dedupe import dedupe_key
from swath.exporters.items import Item, Source
from swath.exporters.warc_reader import IsFact, RecordRef, read_at
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
class Batch:
    """What a chunk of records gave, in export order: per item its table, dedupe key (when deduping) and
    encoded payload (None: a tombstone), and unreadable lines. Kept as columns so a batch crosses
    processes as a few lists, and the writing process can take a whole batch in one step."""

    tables: list[str] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    payloads: list[Payload | None] = field(default_factory=list)
    tombstones: int = 0
    bad_lines: dict[str, int] = field(default_factory=dict)
    records: int = 0

    @property
    def table(self) -> str | None:
        """The table of every item, if they share one (the usual case)."""
        tables = self.tables
        return tables[0] if tables and tables.count(tables[0]) == len(tables) else None


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


def _ignore_cut(warc: str, message: str) -> None:
    """The scan that made the refs already reported any cut, so no second warning."""


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
            fh = self._files[path] = open(path, "rb")  # kept open across chunks: close()
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
        for ref in refs:
            resp = read_at(self._open(ref.warc), ref, on_truncated=_ignore_cut)
            batch.records += 1
            if resp is None:
                continue
            source = next((s for s in self.sources if s.reads(resp)), None)
            if source is None:
                continue

            def on_bad(n: int, warc: str = ref.warc) -> None:
                batch.bad_lines[warc] = batch.bad_lines.get(warc, 0) + n

            items = list(source.items(resp, want_raw=self.want_raw, on_bad=on_bad))
            if dedupe:
                items.reverse()  # the first copy dedupe meets is then the latest harvested one
            for item in items:
                payload: Payload | None
                if item.deleted:  # tombstones skip the filters: they must reach dedupe whatever they say
                    payload = None
                    batch.tombstones += 1
                else:
                    if uids is not None and item.uid not in uids:
                        continue
                    if start is not None or end is not None:
                        date = item.date
                        if date is None or (start is not None and date < start) or (end is not None and date > end):
                            continue
                    encode, row = by_type[item.type]
                    payload = encode(item, row(item) if row is not None else None)
                tables.append(item.type)
                payloads.append(payload)
                if dedupe:
                    keys.append(dedupe_key(item.key or item.id))
        return batch
