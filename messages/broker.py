"""RabbitMQ topology and a thread-safe publisher with asynchronous confirms.

The publisher owns one pika SelectConnection on its own I/O thread. Any thread may call `publish()`;
messages are sent persistent and `mandatory`, up to `confirm_window` of them unconfirmed at once, and each
`publish()` returns a Future that resolves when the broker confirmed the message — or fails when the
broker returned it (it routed nowhere) or nacked it. Unconfirmed messages are sent again after a reconnect
(at-least-once; consumers are idempotent by message id). A publisher made with `give_up_after` (the CLI's)
fails its futures with a `BrokerError` instead of waiting for a broker that refuses it or stays away.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field

import pika
import pika.exceptions
import pika.frame
from pika.adapters.select_connection import SelectConnection
from pika.channel import Channel
from pika.spec import Basic, BasicProperties

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.messages.broker_errors import BrokerError, classify, safe_url
from swath.messages.model import encode_body
from swath.messages.nodes import Nodes
from swath.messages.topology import (
    DEAD_QUEUE,
    DEAD_REASON_CODE,
    DEAD_REASON_MESSAGE,
    DEAD_ROUTING_KEY,
    STATUS_BINDINGS,
    connection_parameters,
    declare_topology,
    declare_work_queue,
    open_blocking,
    worker_queue_arguments,
)

# The topology names lived here first and are still imported from here.
__all__ = ["DEAD_QUEUE", "DEAD_REASON_CODE", "DEAD_REASON_MESSAGE", "DEAD_ROUTING_KEY", "STATUS_BINDINGS",
           "connection_parameters", "declare_topology", "declare_work_queue", "open_blocking",
           "worker_queue_arguments", "Publisher", "PublishError", "Unroutable", "Nacked", "PublisherClosed"]

log = logging.getLogger(__name__)
NACK_RETRIES = 8  # a nacked message is sent again on a new connection this often, then its publish fails

class PublishError(SwathError):
    """A message was not accepted by the broker."""


class Unroutable(PublishError):
    """The broker returned a mandatory message: no queue is bound for its routing key."""


class Nacked(PublishError):
    """The broker refused responsibility for a message (basic.nack)."""


class PublisherClosed(PublishError):
    """publish() was called after close(), or close() ran before the message was confirmed."""


@dataclass
class _Pending:
    exchange: str
    routing_key: str
    body: bytes
    headers: dict[str, object]  # AMQP table values
    future: Future[None] = field(default_factory=Future)
    message_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    nacks: int = 0  # times the broker nacked it; sent again until NACK_RETRIES


class Publisher:
    """Publish persistent, mandatory messages with asynchronous publisher confirms (see module doc)."""

    def __init__(self, *, config: Config, name: str = "swath-publisher", give_up_after: float | None = None) -> None:
        self.config = config
        self.name = name
        # None: wait for the broker as long as it takes (workers). Else: seconds a publish may wait for an
        # unreachable broker before its future fails; a refused login, vhost or permission fails it at once.
        self.give_up_after = give_up_after
        self.last_error: BrokerError | None = None  # why the last connection attempt failed
        self._outage_since: float | None = None
        self._logged_code: str | None = None
        self._pending: collections.deque[_Pending] = collections.deque()
        self._unconfirmed: dict[int, _Pending] = {}
        self._by_message_id: dict[str, _Pending] = {}
        self._lock = threading.Lock()
        self._connection: SelectConnection | None = None
        self._channel: Channel | None = None
        self._next_tag = 0
        self._closing = False
        self._ready = threading.Event()
        self._closed = threading.Event()  # ends a wait between connection attempts at once
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._nodes = Nodes(config.amqp_url, name=name, heartbeat=config.heartbeat)

    # ---- any thread ----

    def start(self) -> Publisher:
        self._thread.start()
        return self

    def publish(
        self,
        routing_key: str,
        body: Mapping[str, object] | bytes,
        *,
        exchange: str | None = None,
        headers: Mapping[str, object] | None = None,
    ) -> Future[None]:
        """Queue a message; the returned Future resolves once the broker confirmed it."""
        item = _Pending(
            exchange=self.config.exchange if exchange is None else exchange,
            routing_key=routing_key,
            body=body if isinstance(body, bytes) else encode_body(body),
            headers=dict(headers or {}),
        )
        with self._lock:
            if self._closing:
                raise PublisherClosed("publisher is closed")
            refusal = self._given_up()
            if refusal is None:
                self._pending.append(item)
        if refusal is not None:
            item.future.set_exception(refusal)
            return item.future
        self._wake()
        return item.future

    def publish_and_wait(self, routing_key: str, body: Mapping[str, object] | bytes, timeout: float | None = None,
                         *, exchange: str | None = None, headers: Mapping[str, object] | None = None) -> None:
        self.publish(routing_key, body, exchange=exchange, headers=headers).result(timeout)

    def wait_ready(self, timeout: float = 30.0) -> bool:
        return self._ready.wait(timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Wait (up to `timeout`) for unconfirmed messages, then close; remaining futures fail."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if not self._pending and not self._unconfirmed:
                    break
            time.sleep(0.02)
        with self._lock:
            self._closing = True
        self._closed.set()
        connection = self._connection
        if connection is not None:
            try:
                connection.ioloop.add_callback_threadsafe(self._shutdown)
            except Exception:  # the loop may already be gone
                pass
        self._thread.join(timeout=10)
        self._fail_all(PublisherClosed("publisher closed before the broker confirmed the message"))

    def __enter__(self) -> Publisher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _wake(self) -> None:
        connection = self._connection
        if connection is not None and self._ready.is_set():
            try:
                connection.ioloop.add_callback_threadsafe(self._drain)
            except Exception:  # reconnecting: _on_channel_open drains
                pass

    # ---- I/O thread ----

    def _run(self) -> None:
        delay = 0.5
        tried = 0  # nodes tried since the last one that worked
        while not self._closing:
            try:
                self._connection = SelectConnection(
                    self._nodes.current(),
                    on_open_callback=self._on_connection_open,
                    on_open_error_callback=self._on_open_error,
                    on_close_callback=self._on_connection_closed,
                )
                self._connection.ioloop.start()
            except (pika.exceptions.AMQPError, OSError) as exc:  # e.g. a host name that does not resolve
                self.last_error = classify(exc, self._nodes.current_url())
            if self._closing:
                break
            if self._ready.is_set():
                delay, tried = 0.5, 0
            self._ready.clear()
            self._nodes.failed()  # the next attempt goes to the next node; unconfirmed messages go with it
            tried += 1
            if tried % len(self._nodes.urls):  # another node is still untried in this outage: go at once
                self._closed.wait(min(0.2, self._after_failure(0.2)))
                continue
            self._closed.wait(self._after_failure(delay))
            delay = min(delay * 2, self.config.reconnect_max_delay)

    def _after_failure(self, delay: float) -> float:
        """Say once per outage (and per new reason) why there is no broker; fail what may not wait. Returns
        how long to wait before the next attempt."""
        error = self.last_error or BrokerError(f"{self.name} lost the broker")
        now = time.monotonic()
        if self._outage_since is None:
            self._outage_since = now
        quiet = self.give_up_after is not None or error.code == self._logged_code  # the caller reports it
        log.log(logging.DEBUG if quiet else logging.WARNING, "%s: %s; retrying in %.1fs", self.name, error, delay)
        self._logged_code = error.code
        if self.give_up_after is None:
            return delay
        waited = now - self._outage_since
        if error.fatal or waited >= self.give_up_after:
            self._fail_waiting(error)
            return delay  # publishes arriving meanwhile fail at once (_given_up)
        return min(delay, self.give_up_after - waited)

    def _given_up(self) -> BrokerError | None:
        """The error a new publish fails with at once: the broker refused us or stayed away past give_up_after."""
        error, since = self.last_error, self._outage_since
        if self.give_up_after is None or error is None or since is None or self._ready.is_set():
            return None
        return error if error.fatal or time.monotonic() - since >= self.give_up_after else None

    def _fail_waiting(self, error: BrokerError) -> None:
        """Fail the messages waiting for a connection (none of them reached the broker)."""
        with self._lock:
            items = list(self._pending)
            self._pending.clear()
        for item in items:
            if not item.future.done():
                item.future.set_exception(error)

    def _on_open_error(self, connection: SelectConnection, error: Exception) -> None:
        self.last_error = classify(error, self._nodes.current_url())
        connection.ioloop.stop()

    def _on_connection_open(self, connection: SelectConnection) -> None:
        connection.channel(on_open_callback=self._on_channel_open)

    def _on_connection_closed(self, connection: SelectConnection, reason: Exception) -> None:
        if self.last_error is None and not self._closing:  # a channel refusal said it better already
            self.last_error = classify(reason, self._nodes.current_url())
        self._channel = None
        self._requeue_unconfirmed()
        connection.ioloop.stop()

    def _on_channel_open(self, channel: Channel) -> None:
        self._channel = channel
        self._next_tag = 0
        channel.add_on_return_callback(self._on_return)
        channel.add_on_close_callback(self._on_channel_closed)
        channel.confirm_delivery(self._on_confirm, callback=lambda _frame: self._declare(channel))

    def _declare(self, channel: Channel) -> None:
        config = self.config

        def ready(_frame: pika.frame.Method) -> None:
            if self._outage_since is not None:
                log.info("%s reached the broker at %s again", self.name, safe_url(self._nodes.current_url()))
            self.last_error, self._outage_since, self._logged_code = None, None, None
            self._ready.set()
            self._drain()

        channel.exchange_declare(
            exchange=config.exchange, exchange_type="topic", durable=True,
            callback=lambda _f: channel.exchange_declare(
                exchange=config.dead_letter_exchange, exchange_type="topic", durable=True, callback=ready),
        )

    def _on_channel_closed(self, channel: Channel, reason: Exception) -> None:
        if not self._closing and not isinstance(reason, pika.exceptions.ChannelClosedByClient):
            self.last_error = classify(reason, self._nodes.current_url())  # e.g. no permission to declare
        self._channel = None
        self._requeue_unconfirmed()
        if self._connection is not None and self._connection.is_open:
            self._connection.close()

    def _drain(self) -> None:
        channel = self._channel
        if channel is None or not channel.is_open:
            return
        while True:
            with self._lock:
                if not self._pending or len(self._unconfirmed) >= self.config.confirm_window:
                    return
                item = self._pending.popleft()
                self._next_tag += 1
                self._unconfirmed[self._next_tag] = item
                self._by_message_id[item.message_id] = item
            channel.basic_publish(
                exchange=item.exchange,
                routing_key=item.routing_key,
                body=item.body,
                properties=BasicProperties(
                    content_type="application/json",
                    delivery_mode=pika.DeliveryMode.Persistent,
                    message_id=item.message_id,
                    headers=item.headers or None,
                ),
                mandatory=True,
            )

    def _on_return(self, channel: Channel, method: Basic.Return, props: BasicProperties, body: bytes) -> None:
        # A return always precedes the confirm of the same message, so failing the future here wins.
        with self._lock:
            item = self._by_message_id.get(props.message_id or "")
        if item is not None and not item.future.done():
            item.future.set_exception(
                Unroutable(f"no queue is bound for routing key {method.routing_key!r} on exchange "
                           f"{method.exchange!r} ({method.reply_text}); is the worker for it running?")
            )

    def _on_confirm(self, frame: pika.frame.Method) -> None:
        method = frame.method
        nack = isinstance(method, Basic.Nack)
        with self._lock:
            if method.multiple:
                tags = [t for t in self._unconfirmed if t <= method.delivery_tag]
            else:
                tags = [method.delivery_tag] if method.delivery_tag in self._unconfirmed else []
            items = [self._unconfirmed.pop(t) for t in tags]
            for item in items:
                self._by_message_id.pop(item.message_id, None)
        retry = [item for item in items if nack and not item.future.done() and item.nacks < NACK_RETRIES]
        for item in items:
            if item.future.done() or item in retry:
                continue
            if nack:
                item.future.set_exception(Nacked(f"broker nacked message for {item.routing_key!r} "
                                                 f"{item.nacks + 1} times"))
            else:
                item.future.set_result(None)
        if retry:
            self._retry_nacked(retry)
        self._drain()

    def _retry_nacked(self, items: list[_Pending]) -> None:
        """A quorum queue nacks while it has no leader, and RabbitMQ 3.10 keeps nacking a channel that first
        published to the queue then, even after a new leader took over: send them again on a new connection."""
        with self._lock:
            for item in items:
                item.nacks += 1
            self._pending.extendleft(reversed(items))
        self.last_error = BrokerError(f"the broker nacked {len(items)} message(s) (a queue electing a new leader "
                                      "after a lost node?); sending them again on a new connection")
        channel = self._channel
        if channel is not None and channel.is_open:
            channel.close()  # _on_channel_closed puts the unconfirmed back and closes the connection

    def _requeue_unconfirmed(self) -> None:
        """After a lost channel: messages not yet confirmed go back to the front, in order."""
        with self._lock:
            items = [self._unconfirmed[t] for t in sorted(self._unconfirmed)]
            self._unconfirmed.clear()
            for item in reversed(items):
                self._by_message_id.pop(item.message_id, None)
                if not item.future.done():
                    self._pending.appendleft(item)

    def _shutdown(self) -> None:
        if self._connection is not None and self._connection.is_open:
            self._connection.close()
        elif self._connection is not None:
            self._connection.ioloop.stop()

    def _fail_all(self, error: Exception) -> None:
        with self._lock:
            items = list(self._pending) + list(self._unconfirmed.values())
            self._pending.clear()
            self._unconfirmed.clear()
        for item in items:
            if not item.future.done():
                item.future.set_exception(error)
