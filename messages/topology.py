"""What swath declares on the broker: the topic exchange, the dead-letter pair, the status queue and one work
queue per worker service, and how a blocking client connects to the nodes in SWATH_AMQP_URL.

Work queues (and the status and dead-letter queues) are quorum queues: replicated on every node of a cluster
(a majority must be up) and durable. Work queues have a delivery limit, so a message whose worker dies with it
every time is dead-lettered once it went back more than `SWATH_DELIVERY_LIMIT` times (reason `delivery_limit`)
instead of looping forever.
Dead-lettering is at-least-once (RabbitMQ 3.10+: the broker keeps the message until the dead-letter queue
confirmed it, which needs `x-overflow: reject-publish`). Per-replica stop queues are exclusive, so classic.
"""

from __future__ import annotations

from dataclasses import dataclass

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel

from swath.core.config import Config
from swath.messages.broker_errors import classify
from swath.messages.nodes import Nodes

# Headers carried by dead-lettered messages so an operator can see why.
DEAD_REASON_CODE = "x-swath-error-code"
DEAD_REASON_MESSAGE = "x-swath-error-message"
DEAD_ROUTING_KEY = "x-swath-original-routing-key"
DEAD_QUEUE = "x-swath-original-queue"

# Everything a requester or the monitor needs to hear.
STATUS_BINDINGS = ["harvest.status.#", "export.status.#", "warc_created"]


def open_blocking(config: Config, *, name: str, nodes: Nodes | None = None) -> pika.BlockingConnection:
    """A BlockingConnection to the first node of SWATH_AMQP_URL that answers, or a `BrokerError` saying in one
    line why there is none."""
    nodes = nodes or Nodes(config.amqp_url, name=name, heartbeat=config.heartbeat)
    try:
        connection = pika.BlockingConnection(nodes.parameters())
    except (pika.exceptions.AMQPError, OSError) as exc:
        raise classify(exc, config.amqp_url) from None
    nodes.connected_to(connection)
    return connection


def connection_parameters(config: Config, *, name: str) -> list[pika.URLParameters]:
    """Every node's parameters, in SWATH_AMQP_URL's order."""
    return Nodes(config.amqp_url, name=name, heartbeat=config.heartbeat).parameters()


def worker_queue_arguments(config: Config, queue: str | None = None) -> dict[str, str | int]:
    """Arguments of a work queue (`queue`: its name); identical on every declare (RabbitMQ refuses a mismatch,
    and `swath broker setup --migrate` moves a queue declared otherwise)."""
    arguments: dict[str, str | int] = {
        "x-queue-type": "quorum",
        "x-dead-letter-exchange": config.dead_letter_exchange,
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",  # at-least-once dead-lettering requires it
    }
    # not the status queue: the monitor hands a status back every few seconds while the store is away
    if config.delivery_limit > 0 and queue != config.status_queue:
        arguments["x-delivery-limit"] = config.delivery_limit
    return arguments


def dead_letter_queue_arguments(config: Config) -> dict[str, str | int]:
    """The dead-letter queue: replicated like the work queues, no limit (peeking it returns every message)."""
    return {"x-queue-type": "quorum"}


def declare_topology(channel: BlockingChannel, config: Config) -> None:
    """Declare the exchange and the dead-letter pair. Works on Blocking channels (synchronous calls)."""
    channel.exchange_declare(exchange=config.exchange, exchange_type="topic", durable=True)
    channel.exchange_declare(exchange=config.dead_letter_exchange, exchange_type="topic", durable=True)
    channel.queue_declare(queue=config.dead_letter_queue, durable=True, arguments=dead_letter_queue_arguments(config))
    channel.queue_bind(queue=config.dead_letter_queue, exchange=config.dead_letter_exchange, routing_key="#")
    if config.status_queue:
        declare_work_queue(channel, config, config.status_queue, STATUS_BINDINGS)


def declare_work_queue(channel: BlockingChannel, config: Config, queue: str, bindings: list[str]) -> None:
    channel.queue_declare(queue=queue, durable=True, arguments=worker_queue_arguments(config, queue))
    for binding in bindings:
        channel.queue_bind(queue=queue, exchange=config.exchange, routing_key=binding)


@dataclass(frozen=True)
class QueuePlan:
    """One queue as swath declares it: on `exchange`, bound with `bindings`, with `arguments`."""

    queue: str
    exchange: str
    bindings: list[str]
    arguments: dict[str, str | int]


def queue_plans(config: Config, work_queues: dict[str, list[str]]) -> list[QueuePlan]:
    """Every durable queue swath declares: the dead-letter queue, the status queue, then the work queues given
    (full name -> bindings); what `swath broker setup` declares (and migrates)."""
    plans = [QueuePlan(config.dead_letter_queue, config.dead_letter_exchange, ["#"],
                       dead_letter_queue_arguments(config))]
    if config.status_queue:
        plans.append(QueuePlan(config.status_queue, config.exchange, list(STATUS_BINDINGS),
                               worker_queue_arguments(config, config.status_queue)))
    plans += [QueuePlan(name, config.exchange, bindings, worker_queue_arguments(config, name))
              for name, bindings in work_queues.items()]
    return plans
