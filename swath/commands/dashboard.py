"""`swath dashboard`: serve the read-only status page."""

from __future__ import annotations

import click

from swath.commands.common import (
    JSON_OPTION,
    config_of,
    emit,
    handles_errors,
    listening,
    open_store,
    serve_until_interrupted,
)
from swath.core.errors import SwathError
from swath.core.hosts import is_loopback
from swath.messages import codes


@click.command(name="dashboard")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (0.0.0.0 in a container).")
@click.option("--port", default=8080, show_default=True, type=int)
@click.option("--refresh", default=10, show_default=True, type=int, help="Seconds between updates of the page.")
@click.option("--management-url", envvar="SWATH_RABBITMQ_MANAGEMENT_URL", default=None,
              help="RabbitMQ management API, e.g. http://user:pass@rabbitmq:15672 (SWATH_RABBITMQ_MANAGEMENT_URL); "
                   "without it queue depths come from passive declares.")
@click.option("--open", "open_to_all", is_flag=True,
              help="Serve beyond this machine without SWATH_DASHBOARD_TOKEN (only behind a proxy that authenticates, "
                   "or a port published on 127.0.0.1 as docker-compose.yml does).")
@click.option("--once", is_flag=True, help="Print the snapshot (sources, jobs, queues) and exit instead of serving.")
@JSON_OPTION
@click.pass_context
@handles_errors
def command(ctx: click.Context, host: str, port: int, refresh: int, management_url: str | None, open_to_all: bool,
            once: bool, as_json: bool) -> None:
    """Serve a self-updating page: sources, running and recent jobs with stats and messages, WARC volume
    per collection, queue depths and consumers, dead-lettered messages. /api/status gives the same as JSON."""
    from swath.dashboard.server import Dashboard
    from swath.shared.snapshot import gather

    config, store = config_of(ctx), open_store(ctx)
    if once:
        snap = gather(config=config, store=store, management_url=management_url)
        lines = [f"{len(snap.sources)} source(s), {len(snap.running)} queued/running job(s), "
                 f"{len(snap.recent)} recent job(s), {snap.rejected_total} refused status message(s)"]
        lines += [f"queue {q['name']}: " + ("missing (`swath broker setup` declares it)" if q.get("missing") else
                                            f"{q['messages']} message(s), {q['consumers']} consumer(s)")
                  for q in snap.queues]
        lines += [f"broker: {snap.broker_error}"] if snap.broker_error else []
        emit(snap.to_dict(), as_json, "\n".join(lines))
        return
    if not (once or config.dashboard_token or open_to_all or is_loopback(host)):
        raise SwathError(f"--host {host} would show every group's work to whoever reaches it: set "
                         "SWATH_DASHBOARD_TOKEN (or pass --open behind an authenticating proxy)",
                         code=codes.DASHBOARD_TOKEN_MISSING)
    dashboard = listening(lambda: Dashboard(config=config, store=store, host=host, port=port, refresh=refresh,
                                            management_url=management_url), host, port)
    serve_until_interrupted(dashboard, f"dashboard at {dashboard.url}")
