"""`swath monitor`: the service recording statuses, WARCs and exports from the status queue."""

from __future__ import annotations

import click

from swath.commands.common import (
    JSON_OPTION,
    config_of,
    emit,
    handles_errors,
    open_store,
)


@click.command(name="monitor")
@JSON_OPTION
@click.pass_context
@handles_errors
def command(ctx: click.Context, as_json: bool) -> None:
    """Record harvest.status, export.status and warc_created messages in the store, until SIGTERM/Ctrl-C.

    Consumes SWATH_STATUS_QUEUE (default swath_monitor), the durable queue every worker declares; messages
    that do not validate are dead-lettered with the reason and counted in the store. On exit prints how many
    messages it handled.
    """
    from swath.monitor import monitor_worker

    config = config_of(ctx)
    worker = monitor_worker(config=config, store=open_store(ctx))
    worker.install_signal_handlers()
    worker.run()
    emit({"queue": worker.queue, "processed": worker.processed}, as_json,
         f"monitor stopped after {worker.processed} message(s) from {worker.queue}")
