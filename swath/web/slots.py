"""Bounded work in the web process: at most `size` holders at once, at most `queue` more waiting (each up to
`wait` seconds); anyone else is refused at once with `Busy` (429 web_busy), so a burst of requests neither
piles up memory nor holds every server thread."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from swath.core.errors import SwathError
from swath.messages import codes


class Busy(SwathError):
    """Every slot is taken and the wait ran out (or no one may wait): try again in a moment."""

    code = codes.WEB_BUSY


class Slots:
    def __init__(self, *, size: int, wait: float, queue: int, what: str) -> None:
        self.size, self.wait, self.queue, self.what = size, wait, queue, what
        self._free = threading.BoundedSemaphore(size)
        self._lock = threading.Lock()
        self._waiting = 0

    def acquire(self) -> None:
        """Take a slot or raise Busy; release() it when done."""
        if self._free.acquire(blocking=False):
            return
        with self._lock:
            if self._waiting >= self.queue:
                raise Busy(f"too many {self.what} at once; try again in a moment")
            self._waiting += 1
        try:
            taken = self._free.acquire(timeout=self.wait)
        finally:
            with self._lock:
                self._waiting -= 1
        if not taken:
            raise Busy(f"too many {self.what} at once; try again in a moment")

    def release(self) -> None:
        self._free.release()

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()
