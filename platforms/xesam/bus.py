"""A small D-Bus endpoint on jeepney: serve objects, call methods without blocking, watch signals.

One receiver thread reads the connection. Incoming method calls go to the handler registered for
(path, interface); a handler gets a `Call` it may answer later (deferred replies are how a crawler
applies back-pressure). Replies to our own calls go to a callback, so a caller never has to block.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from jeepney import (
    DBusAddress,
    HeaderFields,
    Message,
    MessageType,
    new_error,
    new_method_call,
    new_method_return,
    new_signal,
)
from jeepney.io.threading import ReceiveStopped, open_dbus_connection
from jeepney.low_level import Endianness, Header

DBUS = DBusAddress("/org/freedesktop/DBus", bus_name="org.freedesktop.DBus", interface="org.freedesktop.DBus")
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
ERR_UNKNOWN_METHOD = "org.freedesktop.DBus.Error.UnknownMethod"
ERR_UNKNOWN_OBJECT = "org.freedesktop.DBus.Error.UnknownObject"
ERR_INVALID_ARGS = "org.freedesktop.DBus.Error.InvalidArgs"
ERR_DISCONNECTED = "org.freedesktop.DBus.Error.Disconnected"


class BusError(Exception):
    """A D-Bus error reply (or a lost connection) to one of our calls."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(f"{name}: {message}")
        self.name = name
        self.message = message


def header(msg: Message, name: HeaderFields, default: Any = None) -> Any:
    return msg.header.fields.get(name, default)


def error_of(msg: Message) -> BusError | None:
    """The BusError an error reply stands for, or None for a method return."""
    if msg.header.message_type is not MessageType.error:
        return None
    text = msg.body[0] if msg.body and isinstance(msg.body[0], str) else ""
    return BusError(header(msg, HeaderFields.error_name, "unknown"), text)


@dataclass
class Call:
    """One incoming method call; answer it exactly once with `reply` or `fail` (from any thread)."""

    endpoint: Endpoint
    msg: Message
    answered: bool = False

    @property
    def sender(self) -> str:
        sender: str = header(self.msg, HeaderFields.sender, "")
        return sender

    @property
    def signature(self) -> str:
        signature: str = header(self.msg, HeaderFields.signature, "")
        return signature

    @property
    def args(self) -> tuple[Any, ...]:  # typed by the call's D-Bus signature
        return tuple(self.msg.body)

    def reply(self, signature: str | None = None, body: tuple[object, ...] = ()) -> None:
        if not self.answered:
            self.answered = True
            self.endpoint.send(new_method_return(self.msg, signature, body))

    def fail(self, name: str, text: str) -> None:
        if not self.answered:
            self.answered = True
            self.endpoint.send(new_error(self.msg, name, "s", (text,)))


@dataclass
class Interface:
    """Methods served under one interface name on one object path."""

    name: str
    methods: dict[str, Callable[[Call], None]]  # member -> handler; handlers must not block
    introspection: str = ""  # the <interface> element for Introspect


@dataclass
class _SignalWatch:
    interface: str
    member: str
    callback: Callable[[Message], None]
    sender: str | None = None


@dataclass
class Endpoint:
    """One connection to a bus (address like "unix:path=/tmp/x") with a receiver thread."""

    address: str
    objects: dict[str, dict[str, Interface]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.conn = open_dbus_connection(bus=self.address)
        self.unique_name: str = self.conn.unique_name
        self._pending: dict[int, Callable[[Message], None]] = {}
        self._watches: list[_SignalWatch] = []
        self._lock = threading.Lock()
        self.closed = threading.Event()
        self._thread = threading.Thread(target=self._receive, name=f"dbus-{self.unique_name}", daemon=True)
        self._thread.start()

    # ---- sending ----
    def send(self, msg: Message) -> int:
        serial: int = next(self.conn.outgoing_serial)
        self.conn.send(msg, serial=serial)
        return serial

    def call_async(self, msg: Message, on_reply: Callable[[Message], None]) -> None:
        """Send a method call; `on_reply` runs on the receiver thread with the return or error message."""
        serial = next(self.conn.outgoing_serial)
        with self._lock:
            if self.closed.is_set():
                raise BusError(ERR_DISCONNECTED, "the bus connection is closed")
            self._pending[serial] = on_reply
        self.conn.send(msg, serial=serial)

    def call(self, msg: Message, *, timeout: float | None = 10.0) -> tuple[Any, ...]:  # by the reply's signature
        """Send a method call and wait for the reply body (never from the receiver thread)."""
        done: Future[Message] = Future()
        self.call_async(msg, done.set_result)
        reply = done.result(timeout=timeout)
        err = error_of(reply)
        if err is not None:
            raise err
        return tuple(reply.body)

    def request_name(self, name: str) -> None:
        """Own a well-known name (DO_NOT_QUEUE); raises BusError if someone else has it."""
        (result,) = self.call(new_method_call(DBUS, "RequestName", "su", (name, 4)))
        if result not in (1, 4):  # primary owner, or already owner
            raise BusError("org.freedesktop.DBus.Error.NameTaken", f"bus name {name!r} is already owned")

    def watch_signal(self, *, interface: str, member: str, callback: Callable[[Message], None],
                     sender: str | None = None) -> None:
        rule = f"type='signal',interface='{interface}',member='{member}'"
        if sender:
            rule += f",sender='{sender}'"
        with self._lock:
            self._watches.append(_SignalWatch(interface, member, callback, sender))
        self.call(new_method_call(DBUS, "AddMatch", "s", (rule,)))

    def emit(self, path: str, interface: str, member: str, signature: str, body: tuple[object, ...]) -> None:
        self.send(new_signal(DBusAddress(path, interface=interface), member, signature, body))

    # ---- serving ----
    def export(self, path: str, interface: Interface) -> None:
        with self._lock:
            self.objects.setdefault(path, {})[interface.name] = interface

    def unexport(self, path: str) -> None:
        with self._lock:
            self.objects.pop(path, None)

    def close(self) -> None:
        with self._lock:
            if self.closed.is_set():
                return
            self.closed.set()
        self.conn.close()
        self._thread.join(timeout=5)

    # ---- the receiver thread ----
    def _receive(self) -> None:
        try:
            while True:
                self._dispatch(self.conn.receive())
        except (ReceiveStopped, OSError, ValueError):
            pass
        finally:
            self.closed.set()
            with self._lock:
                pending, self._pending = self._pending, {}
            for callback in pending.values():  # every waiting caller learns the bus is gone
                callback(_disconnected())

    def _dispatch(self, msg: Message) -> None:
        kind = msg.header.message_type
        if kind in (MessageType.method_return, MessageType.error):
            with self._lock:
                callback = self._pending.pop(header(msg, HeaderFields.reply_serial, -1), None)
            if callback is not None:
                callback(msg)
        elif kind is MessageType.method_call:
            self._serve(Call(self, msg))
        elif kind is MessageType.signal:
            iface, member = header(msg, HeaderFields.interface), header(msg, HeaderFields.member)
            sender = header(msg, HeaderFields.sender)
            with self._lock:
                watches = list(self._watches)
            for w in watches:
                if w.interface == iface and w.member == member and w.sender in (None, sender):
                    w.callback(msg)

    def _serve(self, call: Call) -> None:
        path = header(call.msg, HeaderFields.path)
        iface = header(call.msg, HeaderFields.interface)
        member = header(call.msg, HeaderFields.member)
        with self._lock:
            interfaces = dict(self.objects.get(path, {}))
        if iface == INTROSPECTABLE and member == "Introspect":
            call.reply("s", (self._introspect(path, interfaces),))
            return
        if not interfaces:
            call.fail(ERR_UNKNOWN_OBJECT, f"no object at {path}")
            return
        candidates = [interfaces[iface]] if iface in interfaces else ([] if iface else list(interfaces.values()))
        for interface in candidates:
            handler = interface.methods.get(member)
            if handler is not None:
                try:
                    handler(call)
                except Exception as exc:  # noqa: BLE001  a handler bug must not kill the receiver thread
                    call.fail("org.freedesktop.DBus.Error.Failed", f"{type(exc).__name__}: {exc}")
                return
        call.fail(ERR_UNKNOWN_METHOD, f"no method {iface}.{member} at {path}")

    def _introspect(self, path: str, interfaces: dict[str, Interface]) -> str:
        with self._lock:
            prefix = path.rstrip("/") + "/"
            children = sorted({p[len(prefix):].split("/")[0] for p in self.objects if p.startswith(prefix)})
        body = "".join(i.introspection for i in interfaces.values())
        nodes = "".join(f'<node name="{c}"/>' for c in children)
        return (f'<!DOCTYPE node PUBLIC "-//freedesktop//DTD D-BUS Object Introspection 1.0//EN" '
                f'"http://www.freedesktop.org/standards/dbus/1.0/introspect.dtd">\n'
                f'<node><interface name="{INTROSPECTABLE}"><method name="Introspect">'
                f'<arg name="xml" type="s" direction="out"/></method></interface>{body}{nodes}</node>\n')


def _disconnected() -> Message:
    """A stand-in error reply for calls still waiting when the connection went away."""
    fields = {HeaderFields.error_name: ERR_DISCONNECTED, HeaderFields.signature: "s"}
    return Message(Header(Endianness.little, MessageType.error, 0, 1, 0, 0, fields), ("connection closed",))
