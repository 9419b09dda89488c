"""The processes an export reads with: this one, or a pool forked from a fork server.

Records are read by reference (file, offset), so the work can be split over reader processes that each
open the WARCs themselves (records.RecordReader); the export's own process only dedupes and writes what
comes back, in order. Small exports stay in-process: starting processes costs more than it saves.
Nothing happens at import: the fork server is configured and started by start_processes() (an export
worker's warm-up) or by the first pool that needs it.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import itertools
import multiprocessing
import os
import pickle
import signal
import tempfile
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.context import BaseContext
from pathlib import Path

from swath.core import warc_files
from swath.core.config import Config
from swath.core.warc_files import stat_warc
from swath.exporters.cpus import idle_cpus
from swath.exporters.records import Batch, Plan, RecordReader, fact_test
from swath.exporters.scans import Scan, scan
from swath.exporters.warc_reader import RecordRef

CHUNK_RECORDS = 8  # records per task: big enough to amortise the hand-off, small enough to keep order cheap
# What the fork server imports once, so each reader process starts with every table module loaded.
PRELOAD = ["swath.exporters.reader"]


def _context() -> BaseContext:
    """The forkserver context, its preload set before the server first starts.

    forkserver, not fork: the exporter may run inside a threaded worker (pika), and forking threads is
    unsafe; the server is a fresh single-threaded process that imported the readers once, so each
    export's processes start by a cheap fork of it instead of a new interpreter importing everything.
    """
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)  # only read when the server starts; later calls change nothing
    return context


def start_processes(config: Config | None = None) -> None:
    """Start the fork server now (an export worker does at start-up), so no export waits for it; returns
    once it has imported the readers and forked a first process. Not with SWATH_EXPORT_WORKERS=1: those
    exports never fork, and the idle server would hold its memory (~30 MB) for nothing."""
    if config is not None and config.export_workers == 1:
        return
    with ProcessPoolExecutor(max_workers=1, mp_context=_context()) as pool:
        pool.submit(int).result()


def free_cpus() -> int:
    """The CPUs this process may run on that are idle now (exporters/cpus.py), rounded; where /proc/stat is
    missing, those the last minute's load average leaves free."""
    allowed = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else set(range(os.cpu_count() or 1))
    idle = idle_cpus(allowed)
    if idle is not None:
        return max(0, round(idle))
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this system either: take every CPU as free
        load = 0.0
    return max(0, round(len(allowed) - load))


def default_workers(total_bytes: int, *, threshold: int = 8 << 20) -> int:
    """Reader processes for an export of WARCs totalling `total_bytes`: one per free CPU (at most 8), and 1
    (this process, no pool) below the threshold or with fewer than 2 free: readers sharing a busy CPU
    with the writing process cost more than they read (issue 35: slower than one process)."""
    if total_bytes < threshold:
        return 1
    free = free_cpus()
    return min(free, 8) if free >= 2 else 1


def processes_for(warcs: list[Path | str], *, asked: int | None, config: Config) -> int:
    """Reader processes for these WARCs: as asked (tests, tools), else SWATH_EXPORT_WORKERS, else by size."""
    return asked or config.export_workers or default_workers(sum(found.size for p in warcs if (found := stat_warc(p))))


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


# --- in a reader process: set by _init_worker, which runs only there ---
_PLAN_PATH: str | None = None
_WORKER: RecordReader | None = None


def _init_worker(plan_path: str, storage: warc_files.Storage | None = None) -> None:
    global _PLAN_PATH
    _PLAN_PATH = plan_path
    warc_files.restore(storage)  # the store s3:// WARCs are read from, passed in memory (it holds credentials)
    # Ctrl-C reaches the whole process group: the export's own process decides how to stop (it stops
    # sending chunks and removes unfinished files); a reader raising KeyboardInterrupt would only break it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.set_threshold(_GC_THRESHOLD, *gc.get_threshold()[1:])  # our own process


def _read_chunk(refs: list[RecordRef]) -> Batch:
    global _WORKER
    if _WORKER is None:  # the plan is written once the scan is done, before the first chunk is sent
        assert _PLAN_PATH is not None, "_init_worker runs before any task"
        with open(_PLAN_PATH, "rb") as fh:
            _WORKER = RecordReader(pickle.load(fh))
    return _WORKER.read(refs)


def _chunks(refs: list[RecordRef], size: int) -> Iterator[list[RecordRef]]:
    for i in range(0, len(refs), size):
        yield refs[i:i + size]


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
            self._pool = ProcessPoolExecutor(max_workers=workers, mp_context=_context(), initializer=_init_worker,
                                             initargs=(self._plan_path, warc_files.storage()))

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
        if self._pool is None or self._plan_path is None:
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
        pending: collections.deque[Future[Batch]] = collections.deque()
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
