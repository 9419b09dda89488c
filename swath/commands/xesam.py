"""`swath xesam serve DIR`: a reference Xesam-PMH target (the crawler is the xesam_pmh harvest type)."""

from __future__ import annotations

import signal
import threading
from pathlib import Path

import click

from swath.core.config import Config
from swath.platforms.xesam.public import DEFAULT_TARGET_PATH, ServeError, serve_target


@click.group(name="xesam")
def command() -> None:
    """Xesam Protocol for Metadata Harvesting over D-Bus (org.freedesktop.xesam.pmh)."""


@command.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--bus-name", default="org.swath.xesam.Target", show_default=True,
              help="Well-known name to own on the session bus (a seed's token).")
@click.option("--object-path", default=DEFAULT_TARGET_PATH, show_default=True, help="Where the Target object lives.")
@click.option("--horizon", type=int, default=0, show_default=True,
              help="Crawlers asking for deltas since an mtime (ms) older than this get a full dump.")
@click.option("--history", type=float, default=None,
              help="Seconds to keep tombstones of deleted records; older ones are forgotten (horizon moves up).")
@click.option("--poll", type=float, default=0.5, show_default=True, help="Seconds between directory scans.")
@click.pass_context
def serve(ctx: click.Context, directory: Path, bus_name: str, object_path: str, horizon: int,
          history: float | None, poll: float) -> None:
    """Serve the JSON records in DIRECTORY (one *.json file each) until SIGINT/SIGTERM."""
    config = ctx.find_object(Config) or Config.from_env()
    if not config.dbus_session_bus_address:
        raise click.UsageError("DBUS_SESSION_BUS_ADDRESS is not set: start a session bus first")
    try:
        served = serve_target(address=config.dbus_session_bus_address, bus_name=bus_name, directory=directory,
                              object_path=object_path, horizon_ms=horizon,
                              history_ms=None if history is None else int(history * 1000), poll=poll)
    except ServeError as exc:
        raise click.ClickException(str(exc)) from None
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(f"serving {served.records} record(s) from {directory} as {bus_name} {object_path}", err=True)
    while not stop.wait(0.5):
        pass
    served.stop("the target is shutting down")
    click.echo("stopped; every crawler was invalidated", err=True)
