"""An overall deadline for one HTTP exchange (connect, headers, body): when it passes, the connection's
socket is shut down, which ends a blocked read at once.

A socket timeout cannot do this: it bounds each recv, and a server sending one byte a second never lets
one time out (http.client and urllib3 loop until a line or chunk is complete). The adapters (harvesters/
http.py) open a `Watch` per exchange; the connection pools made by `watch_pools` attach every connection
they hand out while a watch is current on that thread; one watchdog thread expires them all.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from urllib3 import BaseHTTPResponse, HTTPConnectionPool, HTTPSConnectionPool, PoolManager

if TYPE_CHECKING:  # urllib3's protocol of a pool's connection (HTTPConnection, HTTPSConnection)
    from urllib3._base_connection import BaseHTTPConnection

_local = threading.local()
REPEAT = 0.5  # an expired watch shuts its sockets again this often, for one connected after it expired


class Watch:
    """One exchange's deadline and the connections it used."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self.fired = False
        self._done = False
        self._shutters: list[Callable[[], None]] = []  # each ends the blocked reads of one socket
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def attaching(self) -> Iterator[None]:
        """While inside, connections taken from a watched pool on this thread belong to this watch."""
        _local.watch = self
        try:
            yield
        finally:
            _local.watch = None

    def attach(self, conn: BaseHTTPConnection) -> None:
        """A connection (urllib3) this exchange uses: its socket, while the connection holds it."""
        self._add(lambda: _shut(conn))

    def attach_response(self, raw: BaseHTTPResponse) -> None:
        """The response (urllib3) being read: http.client hands the socket to a response that will close
        the connection (`Connection: close`), so the connection no longer knows it."""
        self._add(lambda: _shut_response(raw))

    def _add(self, shutter: Callable[[], None]) -> None:
        with self._lock:
            self._shutters.append(shutter)
            if self.fired and not self._done:
                shutter()

    def expire(self) -> bool:
        """Shut the connections down (the watchdog's call); False once the exchange is over."""
        with self._lock:
            if self._done:
                return False
            self.fired = True
            for shutter in self._shutters:
                shutter()
            return True

    @property
    def over(self) -> bool:
        """done() was called (read without the lock: the watchdog only uses it to drop finished watches)."""
        return self._done

    def done(self) -> bool:
        """The exchange is over: no shutdown after this returns. True if the deadline had passed."""
        with self._lock:
            self._done = True
            self._shutters.clear()  # the watchdog keeps the watch until it expires: not its connections
            return self.fired


def _shut(conn: BaseHTTPConnection) -> None:
    sock = getattr(conn, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _shut_response(raw: BaseHTTPResponse) -> None:
    with contextlib.suppress(OSError, ValueError):  # ValueError: no socket (already closed, or a replay)
        raw.shutdown()


class _Watchdog:
    """One daemon thread expiring every watch whose deadline passed."""

    COMPACT_AT = 1024  # watches held before those of finished exchanges are dropped

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None
        self._compact_at = self.COMPACT_AT

    def arm(self, watch: Watch) -> None:
        entry = (watch.expires, next(self._order), watch)
        with self._wake:
            heap = self._heap
            if len(heap) >= self._compact_at:
                # a finished exchange's watch would wait out its deadline here (300 s of a fast harvest's
                # exchanges): dropped now and then, so the heap holds about the exchanges still running
                heap[:] = [kept for kept in heap if not kept[2].over]
                heapq.heapify(heap)
                self._compact_at = max(self.COMPACT_AT, 2 * len(heap))
            heapq.heappush(heap, entry)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="swath-http-deadline", daemon=True)
                self._thread.start()
            elif heap[0] is entry:  # it expires first: the sleeping watchdog wakes earlier. Otherwise it
                self._wake.notify()  # sleeps on (waking it for each exchange cost a thread switch each)

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._wake.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                _, _, watch = heapq.heappop(self._heap)
            if watch.expire():  # still running: shut again a little later, in case it connects after this
                with self._wake:
                    heapq.heappush(self._heap, (time.monotonic() + REPEAT, next(self._order), watch))


WATCHDOG = _Watchdog()


def watch(seconds: float) -> Watch:
    """A running deadline for one exchange; call `done()` on it when the exchange is over."""
    started = Watch(seconds)
    WATCHDOG.arm(started)
    return started


def _attached(conn: BaseHTTPConnection) -> BaseHTTPConnection:
    current = getattr(_local, "watch", None)
    if current is not None:
        current.attach(conn)
    return conn


class _WatchedHTTPPool(HTTPConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> BaseHTTPConnection:
        return _attached(super()._get_conn(timeout))


class _WatchedHTTPSPool(HTTPSConnectionPool):
    def _get_conn(self, timeout: float | None = None) -> BaseHTTPConnection:
        return _attached(super()._get_conn(timeout))


def watch_pools(manager: PoolManager) -> None:
    """Make `manager` build pools whose connections a current Watch attaches."""
    manager.pool_classes_by_scheme = {"http": _WatchedHTTPPool, "https": _WatchedHTTPSPool}
