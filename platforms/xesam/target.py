"""The reference Xesam-PMH target: serves a directory of JSON records to any number of crawlers.

One feeder thread walks the index once for all installed crawlers, from the lowest cursor up; a
crawler joins the pass when it reaches that crawler's mtime. Every call into a crawler is
asynchronous and each crawler has at most one UpdateRecords in flight, so a crawler that blocks
(back-pressure) only stops its own feed; the others keep being served.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from jeepney import DBusAddress, HeaderFields, Message, new_method_call

from swath.platforms.xesam.bus import (
    ERR_INVALID_ARGS,
    BusError,
    Call,
    Endpoint,
    Interface,
    error_of,
    header,
)
from swath.platforms.xesam.payload import (
    DEFAULT_TARGET_PATH,
    IFACE_CRAWLER,
    IFACE_TARGET,
    LIST_RECORDS_SIG,
    UPDATE_RECORDS_SIG,
    Payload,
)
from swath.platforms.xesam.records import DirectoryScanner, Entry, Index, Key

log = logging.getLogger("swath.xesam.target")
NO_REPLY = "org.freedesktop.DBus.Error.NoReply"  # the bus gave up waiting; the crawler is only slow
_MAX_URI = "\U0010ffff"

INTROSPECTION = (
    f'<interface name="{IFACE_TARGET}"><method name="ListRecords">'
    '<arg name="mtime" type="t" direction="in"/><arg name="fields" type="as" direction="in"/>'
    '<arg name="content_cats" type="as" direction="in"/><arg name="source_cats" type="as" direction="in"/>'
    '<arg name="max_batch_size" type="u" direction="in"/><arg name="crawler" type="o" direction="in"/>'
    '<arg name="incremental" type="b" direction="out"/></method></interface>'
)


@dataclass(eq=False)
class Session:
    """One installed crawler: where it is in the pass, what it wants, what is queued for it."""

    sender: str
    path: str
    cursor: Key
    fields: frozenset[str]
    content_cats: frozenset[str]
    source_cats: frozenset[str]
    max_batch: int
    full_cut: Key | None  # full dump: tombstones up to here are not sent
    cleanup_pending: bool
    outbox: deque[Payload] = field(default_factory=deque)
    inflight: bool = False
    idle_sent: bool = False
    sent: int = 0

    def wants(self, entry: Entry) -> bool:
        if entry.deleted and self.full_cut is not None and entry.key <= self.full_cut:
            return False
        if self.content_cats and entry.content_cat not in self.content_cats:
            return False
        return not (self.source_cats and entry.source_cat not in self.source_cats)


@dataclass(kw_only=True)
class Target:
    """Serve `directory` at `path` on `endpoint`; `horizon_ms`: older crawler mtimes get a full dump."""

    endpoint: Endpoint
    directory: Path
    path: str = DEFAULT_TARGET_PATH
    horizon_ms: int = 0
    history_ms: int | None = None  # tombstones older than this are forgotten (and the horizon moves up)
    poll: float = 0.5  # seconds between directory scans
    outbox_limit: int = 1000  # payloads queued per crawler before the pass leaves it behind
    clock: Callable[[], float] = time.time

    def __post_init__(self) -> None:
        self.index = Index()
        self.scanner = DirectoryScanner(self.directory)
        self.sessions: dict[tuple[str, str], Session] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="xesam-target", daemon=True)
        self.bad_files: list[tuple[Path, str]] = []

    # ---- lifecycle ----
    def start(self) -> None:
        self._scan(initial=True)
        self.endpoint.export(self.path, Interface(IFACE_TARGET, {"ListRecords": self._list_records}, INTROSPECTION))
        self.endpoint.watch_signal(interface=IFACE_CRAWLER, member="Invalidated", callback=self._on_invalidated)
        self.endpoint.watch_signal(interface="org.freedesktop.DBus", member="NameOwnerChanged",
                                   callback=self._on_owner_changed)
        self._thread.start()

    def stop(self, message: str = "target shutting down") -> None:
        """Invalidate every crawler (no more records will come) and stop feeding."""
        self._stop.set()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.endpoint.unexport(self.path)
        with self._lock:
            sessions, self.sessions = list(self.sessions.values()), {}
        for s in sessions:
            self._send(s, "Invalidate", "s", (message,), lambda msg: None)

    def crawlers(self) -> list[Session]:
        with self._lock:
            return list(self.sessions.values())

    # ---- D-Bus handlers (receiver thread: never block) ----
    def _list_records(self, call: Call) -> None:
        if call.signature != LIST_RECORDS_SIG:
            call.fail(ERR_INVALID_ARGS, f"ListRecords takes ({LIST_RECORDS_SIG}), got ({call.signature})")
            return
        mtime, fields, content_cats, source_cats, max_batch, crawler = call.args
        with self._lock:
            full = mtime < self.horizon_ms
            session = Session(
                sender=call.sender, path=crawler,
                cursor=(-1, "") if full else (mtime, _MAX_URI),
                fields=frozenset(fields), content_cats=frozenset(content_cats), source_cats=frozenset(source_cats),
                max_batch=max(1, min(max_batch or 100, 10_000)),
                full_cut=self.index.high if full else None, cleanup_pending=full,
            )
            self.sessions[(call.sender, crawler)] = session
        log.info("crawler %s%s installed at mtime %d (%s)", call.sender, crawler, mtime,
                 "full dump" if full else "incremental")
        call.reply("b", (not full,))  # the reply goes out before any call into the crawler
        self._wake.set()

    def _on_invalidated(self, msg: Message) -> None:
        key = (header(msg, HeaderFields.sender, ""), header(msg, HeaderFields.path, ""))
        with self._lock:
            gone = self.sessions.pop(key, None)
        if gone:
            log.info("crawler %s%s invalidated itself: %s", key[0], key[1], msg.body[0] if msg.body else "")

    def _on_owner_changed(self, msg: Message) -> None:
        name, _old, new = msg.body
        if new == "":
            with self._lock:
                for key in [k for k in self.sessions if k[0] == name]:
                    del self.sessions[key]

    # ---- the feeder thread ----
    def _run(self) -> None:
        next_scan = self.clock() + self.poll
        while not self._stop.is_set():
            self._wake.wait(timeout=max(0.0, min(self.poll, next_scan - self.clock())))
            self._wake.clear()
            if self.clock() >= next_scan:
                self._scan(initial=False)
                next_scan = self.clock() + self.poll
            self._pump()

    def _scan(self, *, initial: bool) -> None:
        changed, removed, bad = self.scanner.scan()
        for path, reason in bad:
            if (path, reason) not in self.bad_files:
                log.warning("skipped record file %s: %s", path, reason)
                self.bad_files.append((path, reason))
        if not (changed or removed or self.history_ms):
            return
        now_ms = int(self.clock() * 1000)
        with self._lock:
            for _path, entry in changed:
                if not initial:  # a change the target sees now must sort after everything already sent
                    entry = _stamp_after(entry, self.index.high)
                self.index.put(entry)
            for uri in removed:
                old = self.index.entries.get(uri)
                if old is not None and not old.deleted:
                    stamp = max(now_ms, self.index.high[0] + 1)
                    self.index.put(Entry(uri=uri, mtime=stamp, content_cat=old.content_cat,
                                         source_cat=old.source_cat, deleted=True))
            if self.history_ms is not None:
                self._forget_tombstones(now_ms - self.history_ms)
        if changed or removed:
            self._wake.set()

    def _forget_tombstones(self, before_ms: int) -> None:
        for entry in list(self.index.entries.values()):
            if entry.deleted and entry.mtime < before_ms:
                self.index.drop(entry.uri)
                self.horizon_ms = max(self.horizon_ms, entry.mtime)  # deltas from before this miss a deletion

    def _distribute(self) -> None:
        """The one pass: hand each entry to every crawler whose cursor is below it."""
        active = [s for s in self.sessions.values() if len(s.outbox) < self._limit(s)]
        if not active:
            return
        low = min(s.cursor for s in active)
        for entry in self.index.after(low):
            for s in active:
                if s.cursor < entry.key:
                    s.cursor = entry.key
                    if s.wants(entry):
                        s.outbox.append(entry.payload(s.fields))
            active = [s for s in active if len(s.outbox) < self._limit(s)]
            if not active:
                return

    def _limit(self, s: Session) -> int:
        return max(self.outbox_limit, 2 * s.max_batch)  # a full next batch is ready when a reply comes

    def _pump(self) -> None:
        sends: list[tuple[Session, str, str, tuple[object, ...]]] = []
        with self._lock:
            self._distribute()
            for s in self.sessions.values():
                if s.inflight:
                    continue
                if s.cleanup_pending:
                    s.cleanup_pending = False
                    sends.append((s, "CleanUp", "", ()))
                elif s.outbox:
                    batch = [s.outbox.popleft().to_wire() for _ in range(min(s.max_batch, len(s.outbox)))]
                    s.idle_sent = False
                    s.sent += len(batch)
                    sends.append((s, "UpdateRecords", UPDATE_RECORDS_SIG, (batch,)))
                elif not s.idle_sent and s.cursor >= self.index.high:
                    s.idle_sent = True  # an empty batch: everything up to now has been sent
                    sends.append((s, "UpdateRecords", UPDATE_RECORDS_SIG, ([],)))
                else:
                    continue
                s.inflight = True
        for s, member, sig, body in sends:
            self._send(s, member, sig, body, partial(self._on_reply, s))

    def _send(self, s: Session, member: str, sig: str, body: tuple[object, ...],
              on_reply: Callable[[Message], None]) -> None:
        address = DBusAddress(s.path, bus_name=s.sender, interface=IFACE_CRAWLER)
        try:
            self.endpoint.call_async(new_method_call(address, member, sig or None, body), on_reply)
        except (BusError, OSError, ValueError) as exc:  # the bus went away: nothing more to feed
            log.warning("cannot call %s on %s%s: %s", member, s.sender, s.path, exc)
            self._drop(s)

    def _on_reply(self, s: Session, msg: Message) -> None:
        err = error_of(msg)
        if err is not None and err.name != NO_REPLY:
            log.info("crawler %s%s dropped: %s", s.sender, s.path, err)
            self._drop(s)
        else:
            with self._lock:
                s.inflight = False
        self._wake.set()

    def _drop(self, s: Session) -> None:
        with self._lock:
            if self.sessions.get((s.sender, s.path)) is s:
                del self.sessions[(s.sender, s.path)]


def _stamp_after(entry: Entry, high: Key) -> Entry:
    if entry.mtime > high[0]:
        return entry
    return Entry(uri=entry.uri, mtime=high[0] + 1, content_cat=entry.content_cat, source_cat=entry.source_cat,
                 fields=entry.fields, deleted=entry.deleted)
