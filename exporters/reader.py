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
import itertools
import multiprocessing
import os
import pickle
import signal
import tempfile
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swath.core.config import Config
from swath.exporters import registry
from swath.exporters.dedupe import dedupe_key
from swath.exporters.items import Source
from swath.exporters.scans import Scan, scan
from swath.exporters.warc_reader import IsFact, RecordRef, read_at
from swath.exporters.writers import FORMATS, Encoder

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
    """What a chunk of records gave, in export order: per item its table, dedupe key (when deduping) and
    encoded payload (None: a tombstone), and unreadable lines. Kept as columns so a batch crosses
    processes as a few lists, and the writing process can take a whole batch in one step."""

    tables: list[str] = field(default_factory=list)
    keys: list[int] = field(default_factory=list)
    payloads: list[Any] = field(default_factory=list)
    tombstones: int = 0
    bad_lines: dict[str, int] = field(default_factory=dict)
    records: int = 0

    @property
    def table(self) -> str | None:
        """The table of every item, if they share one (the usual case)."""
        tables = self.tables
        return tables[0] if tables and tables.count(tables[0]) == len(tables) else None


class RecordReader:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.sources: list[Source] = sources_for(plan.type, plan.facts)
        writer_cls = FORMATS[plan.format]
        self.want_raw = writer_cls.needs_raw
        self.tables = {s.table.name: s.table for s in self.sources}
        # per table: its encoder and row function (None when the format needs no columns)
        self._by_type: dict[str, tuple[Encoder, Callable[[Any], list[Any]] | None]] = {
            name: (writer_cls.encoder(t.headers), t.row if writer_cls.needs_row else None)
            for name, t in self.tables.items()
        }
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
        tables, keys, payloads = batch.tables, batch.keys, batch.payloads
        dedupe = plan.newest_first
        by_type = self._by_type
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
            if dedupe:
                items.reverse()  # the first copy dedupe meets is then the latest harvested one
            for item in items:
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


def sources_for(export_type: str, facts: dict[str, Any]) -> list[Source]:
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


def _scan(warc: str, export_type: str, cache_root: Path | None) -> Scan:
    return scan(warc, is_fact=fact_test(export_type), cache_root=cache_root)


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


# --- in a worker process ---
_PLAN_PATH: str | None = None
_WORKER: RecordReader | None = None


def _init_worker(plan_path: str) -> None:
    global _PLAN_PATH
    _PLAN_PATH = plan_path
    # Ctrl-C reaches the whole process group: the export's own process decides how to stop (it stops
    # sending chunks and removes unfinished files); a reader raising KeyboardInterrupt would only break it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(_GC_THRESHOLD, *gc.get_threshold()[1:])  # our own process


def _read_chunk(refs: list[RecordRef]) -> Batch:
    global _WORKER
    if _WORKER is None:  # the plan is written once the scan is done, before the first chunk is sent
        with open(_PLAN_PATH, "rb") as fh:
            _WORKER = RecordReader(pickle.load(fh))
    return _WORKER.read(refs)


def _chunks(refs: list[RecordRef], size: int) -> Iterator[list[RecordRef]]:
    for i in range(0, len(refs), size):
        yield refs[i:i + size]


# forkserver, not fork: the exporter may run inside a threaded worker (pika), and forking threads is
# unsafe; the server is a fresh single-threaded process that imported the readers once, so each
# export's processes start by a cheap fork of it instead of a new interpreter importing everything.
_CONTEXT = multiprocessing.get_context("forkserver")
_CONTEXT.set_forkserver_preload(["swath.exporters.reader"])


def start_processes(config: Config | None = None) -> None:
    """Start the fork server now (an export worker does at start-up), so no export waits for it; returns
    once it has imported the readers and forked a first process. Not with SWATH_EXPORT_WORKERS=1: those
    exports never fork, and the idle server would hold its memory (~30 MB) for nothing."""
    if config is not None and config.export_workers == 1:
        return
    with ProcessPoolExecutor(max_workers=1, mp_context=_CONTEXT) as pool:
        pool.submit(int).result()


class ReaderDied(RuntimeError):
    """A reader process ended without answering (killed); the export cannot know what it had read."""


@contextlib.contextmanager
def _readers_alive() -> Iterator[None]:
    try:
        yield
    except BrokenProcessPool:
        raise ReaderDied("a reader process of this export died (killed, e.g. by the out-of-memory killer?); "
                         "nothing was kept: run the export again, or with SWATH_EXPORT_WORKERS=1") from None


class Readers:
    """The processes an export reads with: none (this process) or a pool of `workers`.

    The pool starts at once, so its processes start up while they scan the WARCs (one task per file);
    the plan, known only after the scan, reaches them through a file they load before their first chunk.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None
        self._plan_path: str | None = None
        if workers > 1:
            fd, self._plan_path = tempfile.mkstemp(prefix="swath-export-plan-")
            os.close(fd)
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=_CONTEXT, initializer=_init_worker,
                                             initargs=(self._plan_path,))

    def __enter__(self) -> Readers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._plan_path is not None:
            os.unlink(self._plan_path)
            self._plan_path = None

    def scans(self, warcs: list[str], export_type: str, *, cache_root: Path | None) -> Iterator[Scan]:
        """Each WARC's Scan, in the order given (kept under `cache_root`, the data root; see scans.py)."""
        if self._pool is None:
            for warc in warcs:
                yield _scan(warc, export_type, cache_root)
        else:
            with _readers_alive():
                yield from self._pool.map(_scan, warcs, itertools.repeat(export_type), itertools.repeat(cache_root))

    def batches(self, plan: Plan, refs: list[RecordRef]) -> Iterator[Batch]:
        """Batches in the order of `refs`."""
        if self._pool is None:
            reader = RecordReader(plan)
            try:
                for chunk in _chunks(refs, CHUNK_RECORDS):
                    with _rare_collections():  # not around the yield: the caller's code keeps its own settings
                        batch = reader.read(chunk)
                    yield batch
            finally:
                reader.close()
            return
        with open(self._plan_path, "wb") as fh:
            pickle.dump(plan, fh)
        pending: collections.deque[Future] = collections.deque()
        try:
            with _readers_alive():
                for chunk in _chunks(refs, CHUNK_RECORDS):  # a bounded window in flight: memory stays flat
                    pending.append(self._pool.submit(_read_chunk, chunk))
                    if len(pending) >= self.workers * 4:
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
