"""Declare swath's queues, and move a queue declared otherwise (a classic queue from an older swath, another
delivery limit) into the queue swath declares now, without losing a message.

RabbitMQ cannot change a queue's type or arguments in place, and refuses a declare that differs from the
queue it has (406 PRECONDITION_FAILED). The move, for a queue Q nobody consumes:
  1. a temporary topic exchange and quorum queue (`Q.swath-migration`, bound with `#`) are declared; the
     temporary queue is bound with Q's bindings and Q unbound, so what is published meanwhile waits there (a
     message published in the instant both are bound arrives twice: consumers already tolerate a redelivery);
  2. Q's messages move: each is got from Q, published to the temporary exchange under its own routing key and
     properties with publisher confirms, and acked on Q only after the confirm;
  3. Q, empty and unbound, is deleted, declared anew and bound;
  4. the temporary queue is unbound, its messages go back the same way into the new Q, and it is deleted.
Bindings an operator added to Q by hand are not known here: add them again after the move.
Each step is safe to interrupt: running `swath broker setup --migrate` again finishes the move.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel
from pika.spec import BasicProperties, Queue

from swath.messages import codes
from swath.messages.broker_errors import BrokerError
from swath.messages.topology import QueuePlan

SUFFIX = ".swath-migration"
_MISMATCH = 406  # PRECONDITION_FAILED: the queue exists with other arguments


@dataclass
class QueueReport:
    queue: str
    bindings: list[str]
    state: str  # "declared", "mismatch" (left as it is; --migrate moves it) or "migrated"
    detail: str = ""  # for a mismatch: the broker's words on what differs
    messages: int | None = None  # messages in the old queue (mismatch) or moved (migrated)
    notes: list[str] = field(default_factory=list)


class QueueSetup:
    """Declare queues on one BlockingConnection, migrating those that differ when asked (see module doc)."""

    def __init__(self, connection: pika.BlockingConnection, *, migrate: bool) -> None:
        self.connection = connection
        self.migrate = migrate
        self._open: BlockingChannel | None = None

    def ensure(self, plan: QueuePlan) -> QueueReport:
        temp = plan.queue + SUFFIX
        leftover = self._depth(temp)  # None: no move of this queue was left unfinished
        try:
            self._declare(plan)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code != _MISMATCH:
                raise
            if not self.migrate:
                return QueueReport(plan.queue, plan.bindings, "mismatch", detail=exc.reply_text,
                                   messages=self._depth(plan.queue))
            return self._move(plan, temp)
        if leftover is None:
            return QueueReport(plan.queue, plan.bindings, "declared")
        moved = self._move_back(plan, temp)
        return QueueReport(plan.queue, plan.bindings, "migrated", messages=moved,
                           notes=[f"finished an interrupted move: {moved} message(s) from {temp}"])

    # ---- steps ----

    def _move(self, plan: QueuePlan, temp: str) -> QueueReport:
        consumers = self._consumers(plan.queue)
        if consumers:
            raise BrokerError(f"queue {plan.queue!r} has {consumers} consumer(s): stop its workers (and the monitor "
                              "for the status queue) before `swath broker setup --migrate`",
                              code=codes.BROKER_QUEUE_MISMATCH)
        channel = self._channel()
        channel.exchange_declare(exchange=temp, exchange_type="topic", durable=True)
        channel.queue_declare(queue=temp, durable=True, arguments={"x-queue-type": "quorum"})
        channel.queue_bind(queue=temp, exchange=temp, routing_key="#")
        for binding in plan.bindings:  # publishes from now on wait in the temporary queue...
            channel.queue_bind(queue=temp, exchange=plan.exchange, routing_key=binding)
        for binding in plan.bindings:  # ...and no longer reach the old one
            channel.queue_unbind(queue=plan.queue, exchange=plan.exchange, routing_key=binding)
        moved = 0
        while True:
            moved += self._drain(plan.queue, temp)
            if not self._depth(plan.queue):
                break
        self._channel().queue_delete(queue=plan.queue)  # empty, and nothing swath publishes routes to it
        self._declare(plan)
        moved_back = self._move_back(plan, temp)
        return QueueReport(plan.queue, plan.bindings, "migrated", messages=moved_back,
                           notes=[f"{moved} message(s) moved out of the old queue, {moved_back} into the new one"])

    def _move_back(self, plan: QueuePlan, temp: str) -> int:
        # a channel that got from the old queue keeps its type and crashes publishing to the new one (3.10)
        if self._open is not None and self._open.is_open:
            self._open.close()
        channel = self._channel()
        channel.exchange_declare(exchange=temp, exchange_type="topic", durable=True)
        for binding in plan.bindings:
            channel.queue_unbind(queue=temp, exchange=plan.exchange, routing_key=binding)
        channel.queue_unbind(queue=temp, exchange=temp, routing_key="#")
        channel.queue_bind(queue=plan.queue, exchange=temp, routing_key="#")
        moved = 0
        while True:  # nothing routes to the temporary queue now: once empty, it stays empty
            moved += self._drain(temp, temp)
            if not self._depth(temp):
                break
        channel = self._channel()
        channel.queue_unbind(queue=plan.queue, exchange=temp, routing_key="#")
        channel.queue_delete(queue=temp)  # quorum queues refuse if-empty: the depth was checked above
        channel.exchange_delete(exchange=temp)
        return moved

    def _drain(self, source: str, exchange: str) -> int:
        """Move every message of `source` through `exchange`, each acked only after its copy was confirmed."""
        channel = self._channel()
        moved = 0
        while True:
            method, props, body = channel.basic_get(source, auto_ack=False)
            if method is None:
                return moved
            channel.basic_publish(exchange, method.routing_key, body, properties=_kept(props), mandatory=True)
            channel.basic_ack(method.delivery_tag)
            moved += 1

    def _declare(self, plan: QueuePlan) -> None:
        channel = self._channel()
        channel.queue_declare(queue=plan.queue, durable=True, arguments=plan.arguments)
        for binding in plan.bindings:
            channel.queue_bind(queue=plan.queue, exchange=plan.exchange, routing_key=binding)

    def _depth(self, queue: str) -> int | None:
        return self._passive(queue, lambda ok: int(ok.message_count))

    def _consumers(self, queue: str) -> int:
        return self._passive(queue, lambda ok: int(ok.consumer_count)) or 0

    def _passive(self, queue: str, read: Callable[[Queue.DeclareOk], int]) -> int | None:
        try:
            return read(self._channel().queue_declare(queue=queue, passive=True).method)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                return None
            raise

    def _channel(self) -> BlockingChannel:
        """The open channel, in confirm mode; a refused declare closes its channel, so each step asks for one."""
        if self._open is None or not self._open.is_open:
            self._open = self.connection.channel()
            self._open.confirm_delivery()
        return self._open


def _kept(props: BasicProperties) -> BasicProperties:
    """The message's own properties; the broker's delivery count stays behind (the new queue counts anew)."""
    headers = {k: v for k, v in (props.headers or {}).items() if k != "x-delivery-count"}
    return BasicProperties(content_type=props.content_type, content_encoding=props.content_encoding,
                           headers=headers or None, delivery_mode=pika.DeliveryMode.Persistent,
                           priority=props.priority, correlation_id=props.correlation_id, reply_to=props.reply_to,
                           expiration=props.expiration, message_id=props.message_id, timestamp=props.timestamp,
                           type=props.type, user_id=props.user_id, app_id=props.app_id)
