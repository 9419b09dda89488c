"""The crawler side of Xesam-PMH: an `org.freedesktop.xesam.pmh.Crawler` object feeding a queue.

Incoming UpdateRecords calls are checked (signature, sender, payload states, timestamp order) and
queued with their call left unanswered; the consumer answers once the payloads are stored. A target
doing its calls asynchronously, as the spec asks, therefore pauses while our storage is busy.
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field
from typing import Literal

from jeepney import DBusAddress, Message, new_method_call

from swath.platforms.xesam.bus import (
    DBUS,
    ERR_INVALID_ARGS,
    BusError,
    Call,
    Endpoint,
    Interface,
)
from swath.platforms.xesam.payload import (
    DEFAULT_TARGET_PATH,
    ERR_BAD_PAYLOAD,
    ERR_INVALIDATED,
    IFACE_CRAWLER,
    IFACE_TARGET,
    LIST_RECORDS_SIG,
    UPDATE_RECORDS_SIG,
    BadPayload,
    Payload,
)

ERR_ACCESS_DENIED = "org.freedesktop.DBus.Error.AccessDenied"

INTROSPECTION = (
    f'<interface name="{IFACE_CRAWLER}">'
    f'<method name="UpdateRecords"><arg name="payloads" type="{UPDATE_RECORDS_SIG}" direction="in"/></method>'
    '<method name="Invalidate"><arg name="debug_message" type="s" direction="in"/></method>'
    '<method name="CleanUp"/>'
    '<signal name="Invalidated"><arg name="debug_message" type="s"/></signal></interface>'
)


@dataclass
class Event:
    """What the target did, in arrival order; a "batch" must be answered with done()/fail()."""

    kind: Literal["batch", "cleanup", "invalidated", "rejected"]
    payloads: list[Payload] = field(default_factory=list)
    out_of_order: list[Payload] = field(default_factory=list)  # payloads older than one received before
    message: str = ""
    call: Call | None = None
    crawler: Crawler | None = None  # set by the crawler that queued it (several may share a queue)

    def done(self) -> None:
        if self.call is not None:
            self.call.reply()

    def fail(self, message: str) -> None:
        if self.call is not None:
            self.call.fail(ERR_BAD_PAYLOAD, message)


@dataclass(kw_only=True)
class Crawler:
    """Installs itself at `path` on `endpoint` into the target `target_name` (a bus name)."""

    endpoint: Endpoint
    path: str
    target_name: str
    target_path: str = DEFAULT_TARGET_PATH
    events: queue.Queue[Event] = field(default_factory=queue.Queue)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.target_owner = ""  # the target's unique name: only it may feed us
        self.received = 0
        self.last_mtime = -1
        self.invalidated = threading.Event()

    def install(self, *, mtime: int, fields: list[str], content_cats: list[str], source_cats: list[str],
                max_batch_size: int, timeout: float = 30.0) -> bool:
        """Export the object and call ListRecords; True means incremental, False a full dump."""
        (self.target_owner,) = self.endpoint.call(new_method_call(DBUS, "GetNameOwner", "s", (self.target_name,)))
        self.endpoint.watch_signal(interface="org.freedesktop.DBus", member="NameOwnerChanged",
                                   sender="org.freedesktop.DBus", callback=self._owner_changed)
        self.endpoint.export(self.path, Interface(IFACE_CRAWLER, {
            "UpdateRecords": self._update_records, "Invalidate": self._invalidate, "CleanUp": self._cleanup,
        }, INTROSPECTION))
        target = DBusAddress(self.target_path, bus_name=self.target_name, interface=IFACE_TARGET)
        body = (mtime, list(fields), list(content_cats), list(source_cats), max_batch_size, self.path)
        try:
            (incremental,) = self.endpoint.call(new_method_call(target, "ListRecords", LIST_RECORDS_SIG, body),
                                                timeout=timeout)
        except BaseException:
            self.endpoint.unexport(self.path)
            raise
        return bool(incremental)

    def invalidate(self, message: str) -> None:
        """We want no more data: emit Invalidated (the target frees the crawler) and leave the bus. Once this
        returns no batch is queued any more: one arriving now is refused, so every queued one can be drained."""
        with self._lock:
            if self.invalidated.is_set():
                return
            self.invalidated.set()
        self.endpoint.unexport(self.path)
        try:
            self.endpoint.emit(self.path, IFACE_CRAWLER, "Invalidated", "s", (message,))
        except (BusError, OSError):
            pass

    def _put(self, event: Event) -> None:
        event.crawler = self
        self.events.put(event)

    # ---- D-Bus handlers (receiver thread) ----
    def _from_target(self, call: Call) -> bool:
        if call.sender != self.target_owner:
            call.fail(ERR_ACCESS_DENIED, f"this crawler takes calls from {self.target_name} only")
            return False
        return True

    def _update_records(self, call: Call) -> None:
        if not self._from_target(call):
            return
        if call.signature != UPDATE_RECORDS_SIG:
            text = f"UpdateRecords takes ({UPDATE_RECORDS_SIG}), got ({call.signature})"
            call.fail(ERR_INVALID_ARGS, text)
            self._put(Event("rejected", message=text))
            return
        try:
            payloads = [Payload.from_wire(raw) for raw in call.args[0]]
        except BadPayload as exc:
            call.fail(ERR_BAD_PAYLOAD, str(exc))
            self._put(Event("rejected", message=str(exc)))
            return
        with self._lock:  # checked and queued under the lock invalidate() takes: none slips in after it
            if self.invalidated.is_set():
                call.fail(ERR_INVALIDATED, "this crawler was invalidated; the batch was not stored")
                return
            out_of_order = []
            for p in payloads:  # the spec orders payloads within a call and between calls
                if p.mtime < self.last_mtime:
                    out_of_order.append(p)
                self.last_mtime = max(self.last_mtime, p.mtime)
            self.received += len(payloads)
            self._put(Event("batch", payloads=payloads, out_of_order=out_of_order, call=call))

    def _cleanup(self, call: Call) -> None:
        if not self._from_target(call):
            return
        with self._lock:
            late = self.received > 0
        if late:  # the spec: CleanUp is only ever the first call
            call.fail(ERR_BAD_PAYLOAD, "CleanUp after UpdateRecords is not allowed")
            self._put(Event("rejected", message="CleanUp arrived after UpdateRecords"))
            return
        call.reply()
        self._put(Event("cleanup"))

    def _owner_changed(self, msg: Message) -> None:
        name, _old, new = msg.body
        if name == self.target_name and new != self.target_owner and not self.invalidated.is_set():
            self.invalidate("the target left the bus")  # a new owner never installed this crawler
            self._put(Event("invalidated", message="the target left the bus"))

    def _invalidate(self, call: Call) -> None:
        if not self._from_target(call):
            return
        message = call.args[0] if call.signature == "s" else ""
        call.reply()
        self.invalidate(message or "invalidated by the target")
        self._put(Event("invalidated", message=message))
