"""`swath broker setup` and `swath broker dead-letters ...`: the RabbitMQ side, for operators."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from swath.commands.common import JSON_OPTION, config_of, emit, handles_errors
from swath.commands.deadletters import dead_letters

if TYPE_CHECKING:  # the broker client loads only when a command runs
    from swath.messages.migrate import QueueReport


@click.group()
def broker() -> None:
    """Set up the RabbitMQ side and handle dead letters (messages no worker could take)."""


@broker.command("setup")
@click.option("--migrate", is_flag=True,
              help="Move queues declared otherwise (classic queues of an older swath, another delivery limit) into "
                   "quorum queues as swath declares them now, keeping every message; stop their workers first.")
@JSON_OPTION
@click.pass_context
@handles_errors
def setup(ctx: click.Context, migrate: bool, as_json: bool) -> None:
    """Declare the exchanges, the dead-letter and status queues and every worker queue (idempotent).

    The queues are quorum queues (replicated on a cluster, with a delivery limit). A queue that exists with
    other arguments is named and left alone, and the command fails, unless --migrate moves it."""
    import pika.exceptions

    from swath.messages import codes
    from swath.messages.broker_errors import BrokerError, classify
    from swath.messages.migrate import QueueSetup
    from swath.messages.topology import open_blocking, queue_plans
    from swath.services import UnknownService, all_services, check_platforms

    config = config_of(ctx)
    try:  # a misspelt SWATH_PLATFORMS would otherwise declare no work queue and succeed
        check_platforms(config.platforms)
    except UnknownService as exc:
        raise click.UsageError(str(exc)) from None
    work = {config.queue_prefix + spec.name: spec.bindings for spec in all_services(config.platforms).values()}
    connection = open_blocking(config, name="swath-broker-setup")
    try:
        channel = connection.channel()
        channel.exchange_declare(exchange=config.exchange, exchange_type="topic", durable=True)
        channel.exchange_declare(exchange=config.dead_letter_exchange, exchange_type="topic", durable=True)
        queues = QueueSetup(connection, migrate=migrate)
        reports = [queues.ensure(plan) for plan in queue_plans(config, work)]
    except (pika.exceptions.AMQPError, OSError) as exc:  # e.g. a user without configure permission
        raise classify(exc, config.amqp_url) from None
    finally:
        if connection.is_open:
            connection.close()
    mismatched = [report.queue for report in reports if report.state == "mismatch"]
    error = BrokerError(f"{len(mismatched)} queue(s) exist with other arguments than swath declares "
                        f"({', '.join(mismatched)}); their messages are untouched. Stop their workers, then run "
                        "`swath broker setup --migrate` to move them into quorum queues (docs/deployment.md)",
                        code=codes.BROKER_QUEUE_MISMATCH) if mismatched else None
    data: dict[str, object] = {"exchange": config.exchange, "queues": [vars(report) for report in reports]}
    if error is not None and as_json:  # one JSON document for scripts, the error inside
        emit({**data, "error": {"code": error.code, "message": error.message}}, True, "")
        ctx.exit(1)
    emit(data, as_json, "\n".join(_line(report) for report in reports))
    if error is not None:
        raise error


def _line(report: QueueReport) -> str:
    bindings = ", ".join(report.bindings)
    if report.state == "mismatch":
        return (f"MISMATCH {report.queue} ({report.messages} message(s) waiting): {report.detail}; "
                "`swath broker setup --migrate` moves it")
    if report.state == "migrated":
        return f"migrated {report.queue} <- {bindings}: {'; '.join(report.notes)}"
    return f"declared {report.queue} <- {bindings}"


broker.add_command(dead_letters)
command = broker
