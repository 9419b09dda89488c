"""From WARC records to encoded export lines: the CPU-heavy half of an export.

Records are read by reference (file, offset), so the work can be split over worker processes that
each open the WARCs themselves; the parent only dedupes and writes what comes back, in order.
Small exports stay in-process: starting workers costs more than it saves.
"""

from __future__ import annotations

import collections
import contextlib
import datetime as dt
import gc
import multiprocessing
import os
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterator

from exporters import registry
from exporters.items import Source
from exporters.warc_reader import RecordRef, read_at
from exporters.writers import FORMATS, Encoder

CHUNK_RECORDS = 8  # records per task: big enough to amortise the hand-off, small enough to keep order cheap
MAX_OPEN_FILES = 16


@dataclass(frozen=True)
class Plan:
    """What to read and how to encode it; picklable, sent once to each worker."""

    type: str
    format: str
    uids: frozenset[str] | None = None
    item_date_start: dt.datetime | None = None
    item_date_end: dt.datetime | None = None
    newest_first: bool = False  # dedupe: items of a record in reverse, records newest first
    facts: dict[str, Any] = field(default_factory=dict)  # what fact records said (see items.Source)


@dataclass
class Batch:
    """What a chunk of records gave: (table, dedupe key, encoded item or None for a tombstone) in export
    order, and unreadable lines."""

    items: list[tuple[str, str, Any]] = field(default_factory=list)
    bad_lines: dict[str, int] = field(default_factory=dict)
    records: int = 0


class RecordReader:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.sources: list[Source] = sources_for(plan.type, plan.facts)
        writer_cls = FORMATS[plan.format]
        self.want_raw = writer_cls.needs_raw
        self.needs_row = writer_cls.needs_row
        self.tables = {s.table.name: s.table for s in self.sources}
        self.encoders: dict[str, Encoder] = {name: writer_cls.encoder(t.headers) for name, t in self.tables.items()}
        self._files: collections.OrderedDict[str, Any] = collections.OrderedDict()

    def _open(self, path: str) -> Any:
        fh = self._files.get(path)
        if fh is None:
            if len(self._files) >= MAX_OPEN_FILES:
                self._files.popitem(last=False)[1].close()
            fh = self._files[path] = open(path, "rb")
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
        out = batch.items
        for ref in refs:
            # The scan that made the refs already reported any cut, so no second warning here.
            resp = read_at(self._open(ref.warc), ref, on_truncated=lambda warc, message: None)
            batch.records += 1
            if resp is None:
                continue
            source = next((s for s in self.sources if s.reads(resp)), None)
            if source is None:
                continue

            def on_bad(n: int, warc: str = ref.warc) -> None:
                batch.bad_lines[warc] = batch.bad_lines.get(warc, 0) + n

            items = list(source.items(resp, want_raw=self.want_raw, on_bad=on_bad))
            if plan.newest_first:
                items.reverse()  # the first copy dedupe meets is then the latest harvested one
            for item in items:
                if item.deleted:  # tombstones skip the filters: they must reach dedupe whatever they say
                    out.append((item.type, item.key or item.id, None))
                    continue
                if uids is not None and item.uid not in uids:
                    continue
                if start is not None or end is not None:
                    date = item.date
                    if date is None or (start is not None and date < start) or (end is not None and date > end):
                        continue
                row = self.tables[item.type].row(item) if self.needs_row else None
                out.append((item.type, item.key or item.id, self.encoders[item.type](item, row)))
        return batch


def sources_for(export_type: str, facts: dict[str, Any]) -> list[Source]:
    sources = [cls() for cls in registry.lookup(export_type).sources]
    for source in sources:
        source.configure(facts)
    return sources


_WORKER: RecordReader | None = None


# Parsed JSON holds no reference cycles, yet every 700 new dicts start a collection that walks the
# young objects: reading a page of tweets would start dozens. Collections are made rare while reading.
_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def _rare_collections() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(max(before[0], _GC_THRESHOLD), *before[1:])
    try:
        yield
    finally:
        gc.set_threshold(*before)


def _init_worker(plan: Plan) -> None:
    global _WORKER
    _WORKER = RecordReader(plan)
    gc.set_threshold(_GC_THRESHOLD, *gc.get_threshold()[1:])  # our own process


def _read_chunk(refs: list[RecordRef]) -> Batch:
    assert _WORKER is not None
    return _WORKER.read(refs)


def _chunks(refs: list[RecordRef], size: int) -> Iterator[list[RecordRef]]:
    for i in range(0, len(refs), size):
        yield refs[i:i + size]


def batches(plan: Plan, refs: list[RecordRef], *, workers: int) -> Iterator[Batch]:
    """Batches in the order of `refs`, from `workers` processes (0 or 1: in this process)."""
    if workers <= 1:
        reader = RecordReader(plan)
        try:
            for chunk in _chunks(refs, CHUNK_RECORDS):
                with _rare_collections():  # not around the yield: the caller's code keeps its own settings
                    batch = reader.read(chunk)
                yield batch
        finally:
            reader.close()
        return
    # spawn, not fork: the exporter may run inside a threaded worker (pika), and forking threads is unsafe.
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_init_worker,
                             initargs=(plan,)) as pool:
        pending: collections.deque[Future] = collections.deque()
        chunks = _chunks(refs, CHUNK_RECORDS)
        try:
            for chunk in chunks:  # keep a bounded window of work in flight, so memory stays flat
                pending.append(pool.submit(_read_chunk, chunk))
                if len(pending) >= workers * 4:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for fut in pending:
                fut.cancel()


def default_workers(total_bytes: int, *, threshold: int = 8 << 20) -> int:
    """Worker processes for an export of WARCs totalling `total_bytes` (1 below the threshold)."""
    if total_bytes < threshold:
        return 1
    return max(1, min(os.cpu_count() or 1, 8))
