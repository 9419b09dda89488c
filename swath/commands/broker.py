"""`swath broker setup` and `swath broker dead-letters ...`: the RabbitMQ side, for operators."""

from __future__ import annotations

import click

from swath.commands.common import JSON_OPTION, config_of, emit, handles_errors
from swath.commands.deadletters import dead_letters


@click.group()
def broker() -> None:
    """Set up the RabbitMQ side and handle dead letters (messages no worker could take)."""


@broker.command("setup")
@JSON_OPTION
@click.pass_context
@handles_errors
def setup(ctx: click.Context, as_json: bool) -> None:
    """Declare the exchange, the dead-letter and status queues and every worker queue (idempotent)."""
    import pika.exceptions

    from swath.messages.broker import declare_topology, declare_work_queue, open_blocking
    from swath.messages.broker_errors import classify
    from swath.services import all_services

    config = config_of(ctx)
    connection = open_blocking(config, name="swath-broker-setup")
    queues = []
    try:
        channel = connection.channel()
        declare_topology(channel, config)
        for spec in all_services().values():
            declare_work_queue(channel, config, config.queue_prefix + spec.name, spec.bindings)
            queues.append({"queue": config.queue_prefix + spec.name, "bindings": spec.bindings})
    except (pika.exceptions.AMQPError, OSError) as exc:  # e.g. a user without configure permission
        raise classify(exc, config.amqp_url) from None
    finally:
        if connection.is_open:
            connection.close()
    emit({"exchange": config.exchange, "queues": queues}, as_json,
         "\n".join(f"declared {q['queue']} <- {', '.join(q['bindings'])}" for q in queues))


broker.add_command(dead_letters)
command = broker
