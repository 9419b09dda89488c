"""The records a platform writes itself (an item's dataset: `harvest.write_record`), gathered and queued to
the WARC writer together: one hand-off to the writer thread per PENDING_MAX records, not one each.

Gathered records go to the writer before any other write (the recording adapter's exchange, a stream's
segment), a rotation or the end, every PENDING_MAX records and on every control-loop tick (`flush`), so file
order is call order and none waits longer than a tick. Used by harvesters/recorder.py.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from swath.harvesters.warc import WarcSeries
from swath.harvesters.warc_records import RecordFactory

PENDING_MAX = 64  # a platform's records queued to the writer together (one hand-off, not one each)


class PendingRecords:
    """The gathered records of one harvest's WARC series (see the module docstring)."""

    def __init__(self, *, series: WarcSeries, factory: RecordFactory) -> None:
        self._series = series
        self._factory = factory
        self._builds: list[Callable[[], list[Any]]] = []
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

        with self._lock:
            self._builds.append(build)
            if len(self._builds) >= PENDING_MAX:
                self._queue()

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

    def write(self, records: list[Any] | Callable[[], list[Any]]) -> None:
        """Queue `records` (or a function building them) after the records gathered so far."""
        with self._lock:
            self._queue()
            self._series.write(records)

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
            builds, self._builds = self._builds, []
            # built one by one as the writer takes them, each compressed before the next is built
            self._series.write(lambda: (record for build in builds for record in build()))
