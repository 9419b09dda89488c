"""The closed WARCs of one harvest (harvesters/recorder.py): every one, an interrupted run's included (what the
final status lists and `bytes_written` sums), and those not yet announced in warc_created, in the order they
were closed. The writer and upload threads add; the control loop takes (harvesters/run.py `_Run.drain`).
"""

from __future__ import annotations

import queue
import threading

from swath.harvesters.warc import ClosedWarc


class Outbox:
    """Closed WARCs: all of them, and the ones not yet taken for warc_created."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._all: list[ClosedWarc] = []
        self._new: queue.SimpleQueue[ClosedWarc] = queue.SimpleQueue()

    def keep(self, prior: list[ClosedWarc]) -> None:
        """An interrupted run's WARCs: listed with this run's, announced again by the run itself."""
        with self._lock:
            self._all.extend(prior)

    def add(self, closed: ClosedWarc) -> None:
        """A WARC this run closed (and stored, with object storage), to be announced."""
        with self._lock:
            self._all.append(closed)
        self._new.put(closed)

    @property
    def all(self) -> list[ClosedWarc]:
        with self._lock:
            return list(self._all)

    def take(self) -> list[ClosedWarc]:
        """The WARCs added since the last call, in order: each is announced once."""
        taken = []
        while True:
            try:
                taken.append(self._new.get_nowait())
            except queue.Empty:
                return taken
