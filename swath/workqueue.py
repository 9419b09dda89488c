"""The requester's look at a worker queue: which queue takes a start, who consumes it, and taking back a start.

Every call opens its own short connection (passive declares, basic_get), so nothing here touches the
requester's publisher; broker faults surface as `BrokerUnavailable` for the caller to word.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pika
import pika.exceptions

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.messages import codes, routing
from swath.messages.topology import connection_parameters

WITHDRAW_LIMIT = 100_000  # messages looked at when taking a start back out of a queue


class BrokerUnavailable(SwathError):
    code = codes.UNKNOWN_ERROR


@dataclass(frozen=True)
class QueueState:
    queue: str  # the work queue's name (prefix included)
    service: str  # the worker service consuming it (`swath worker SERVICE`)
    consumers: int | None  # None: the queue is not declared (`swath broker setup` not run)
    messages: int | None


def worker_service(routing_key: str) -> str | None:
    """The worker service whose queue is bound to this start key (`<platform>_harvester`)."""
    from swath.services import all_services

    key = routing.parse(routing_key)
    noun, _verb = routing.KINDS[key.kind]
    wanted = f"{noun}.start.{key.platform}.*"
    return next((spec.name for spec in all_services().values() if wanted in spec.bindings), None)


@contextmanager
def _connection(config: Config) -> Iterator[pika.BlockingConnection]:
    try:
        connection = pika.BlockingConnection(connection_parameters(config, name="swath-requester-queues"))
    except pika.exceptions.AMQPError as exc:
        raise BrokerUnavailable(f"cannot reach RabbitMQ ({type(exc).__name__})") from None
    try:
        yield connection
    finally:
        if connection.is_open:
            connection.close()


def queue_state(config: Config, routing_key: str) -> QueueState | None:
    """Consumers and depth of the queue a start with this key goes to; None if no service takes it."""
    service = worker_service(routing_key)
    if service is None:
        return None
    queue = config.queue_prefix + service
    with _connection(config) as connection:
        channel = connection.channel()
        try:
            ok = channel.queue_declare(queue=queue, passive=True).method
        except pika.exceptions.ChannelClosedByBroker:  # 404: not declared
            return QueueState(queue=queue, service=service, consumers=None, messages=None)
        channel.close()
    return QueueState(queue=queue, service=service, consumers=ok.consumer_count, messages=ok.message_count)


def withdraw(config: Config, queue: str, message_id: str) -> bool:
    """Take the waiting message whose body has this `id` out of `queue`; True if it was there.

    Every message is fetched unacknowledged, the one asked for is acked, and closing the channel puts the
    others back in their places. A message a consumer already holds is not waiting, so it is not found."""
    with _connection(config) as connection:
        channel = connection.channel()
        try:
            waiting = channel.queue_declare(queue=queue, passive=True).method.message_count
        except pika.exceptions.ChannelClosedByBroker:
            return False
        found = False
        for _ in range(min(waiting, WITHDRAW_LIMIT)):
            method, _props, body = channel.basic_get(queue=queue, auto_ack=False)
            if method is None:
                break
            if _message_id(body) == message_id:
                channel.basic_ack(method.delivery_tag)
                found = True
                break
        channel.close()  # the unacked others go back to the queue
        return found


def _message_id(body: bytes) -> str | None:
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data.get("id") if isinstance(data, dict) else None
