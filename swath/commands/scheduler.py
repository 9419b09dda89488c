"""`swath scheduler`: launch due, validated sources."""

from __future__ import annotations

import signal

import click

from swath.commands.common import JSON_OPTION, emit, handles_errors, open_requester


@click.command(name="scheduler")
@click.option("--tick", default=1.0, show_default=True, help="Seconds between looks at the schedule.")
@JSON_OPTION
@click.pass_context
@handles_errors
def command(ctx: click.Context, tick: float, as_json: bool) -> None:
    """Publish harvest.start for every validated source that is due, until SIGTERM/Ctrl-C.

    A source never has two runs at once: while its job is queued or running the slot waits, and slots
    missed meanwhile (or while the scheduler was down) become one run. The launch record and the next due
    time are written in one transaction, so a restart neither launches twice nor skips. Run one scheduler.
    """
    from swath.scheduler import Scheduler

    scheduler = Scheduler(requester=open_requester(ctx), tick_seconds=tick)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: scheduler.stop.set())
    scheduler.run()
    emit({"launched": scheduler.launched}, as_json, f"scheduler stopped; launched {len(scheduler.launched)} job(s)")
