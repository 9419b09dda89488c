"""Every record of a harvest (an item's dataset: `harvest.write_record`; an exchange the recording adapter
saw; a stream's segment), gathered and queued to the WARC writer together: one hand-off to the writer thread
per PENDING_MAX writes or PENDING_BYTES of payload, not one each. Each hand-off wakes the writer, and on a
busy machine the thread that wakes it often loses its core while it holds the GIL: the process then stalls.

Gathered records go to the writer in call order, before a rotation or the end, every PENDING_MAX writes or
PENDING_BYTES (or the room left in the WARC below its size limit, so rotations come as soon as before) and on
every control-loop tick (`flush`), so file order is call order and none waits longer than a tick. Used by
harvesters/recorder.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from swath.harvesters.warc import WarcSeries, WarcWriteFailed
from swath.harvesters.warc_records import RecordFactory

PENDING_MAX = 64  # writes queued to the writer together (one hand-off, not one each)
PENDING_BYTES = 1 << 20  # ... or fewer, once their payloads reach this: bounds what waits in memory
WRITE_OVERHEAD = 1024  # bytes a write's records hold beside its payload (WARC and HTTP headers), about


class PendingRecords:
    """The gathered records of one harvest's WARC series (see the module docstring)."""

    def __init__(self, *, series: WarcSeries, factory: RecordFactory, warc_max_bytes: int) -> None:
        self._series = series
        self._warc_max_bytes = warc_max_bytes
        self._factory = factory
        self._builds: list[list[Any] | Callable[[], list[Any]]] = []  # records, or functions building them
        self._bytes = 0  # payload bytes gathered
        self._lock = threading.Lock()

    def add(self, *, uri: str, record_type: str, payload: bytes, content_type: str,
            headers: dict[str, str] | None = None) -> None:
        # built on the writer thread, in file order: its WARC-Date and a WARC-Refers-To LAST_RESPONSE
        # follow the records queued before it
        self._series.check()  # a failed writer is reported now, as when each record was queued at once
        factory = self._factory

        def build() -> list[Any]:
            return [factory.plain(uri=uri, record_type=record_type, payload=payload,
                                  content_type=content_type, headers=headers)]

        self._gather(build, len(payload))

    def flush(self) -> None:
        """Queue the records gathered so far (the control loop's tick). Never waits: not for the platform
        thread queueing (it holds the lock), nor for a writer that is behind (a full queue), so the control
        loop stays free to handle a stop or report a stalled disk."""
        if not self._builds or not self._series.has_room() or not self._lock.acquire(blocking=False):
            return
        try:
            self._queue()
        finally:
            self._lock.release()

    def write(self, records: list[Any] | Callable[[], list[Any]], *, size: int = 0) -> None:
        """Gather `records` (or a function building them; `size`: their payload bytes) after those gathered so far."""
        self._series.check()  # a failed writer is reported now, as when each write was queued at once
        self._gather(records, size)

    def _gather(self, records: list[Any] | Callable[[], list[Any]], size: int) -> None:
        with self._lock:
            self._builds.append(records)
            self._bytes += size + WRITE_OVERHEAD
            # near the size limit at once, as before batching: a rotation is judged by the bytes on disk
            room = self._warc_max_bytes - self._series.written
            if len(self._builds) >= PENDING_MAX or self._bytes >= min(PENDING_BYTES, room):
                self._queue()

    @contextmanager
    def queued(self) -> Iterator[None]:
        """Hold the gathering lock with everything gathered so far queued: no record is gathered meanwhile
        (a rotation reads its journal here, so every item the journal counts is in the WARC it closes)."""
        with self._lock:
            self._queue()
            yield

    def _queue(self) -> None:
        """Under the lock: the gathered records to the writer, ahead of whatever is queued next."""
        if self._builds:
            builds, self._builds, self._bytes = self._builds, [], 0
            try:  # built one by one as the writer takes them, each compressed before the next is built
                self._series.write(lambda: (record for build in builds
                                            for record in (build() if callable(build) else build)))
            except WarcWriteFailed:
                pass  # the writer failed: it takes nothing more; the next write, a rotation or the end says why
