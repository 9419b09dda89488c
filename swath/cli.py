"""The `swath` command: run harvests and exports in-process, run worker services, manage the broker."""

from __future__ import annotations

import importlib
import json
import os
import pkgutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, cast

import click

from swath.commands.common import config_of, emit, error_line
from swath.core.config import Config
from swath.core.dataroot import writable_data_root
from swath.core.errors import SwathError
from swath.core.jsontypes import JSONObject
from swath.exporters.writers import FORMATS
from swath.messages import codes
from swath.messages.bodies import HarvestStatusBody, StatusBody, WarcCreatedBody
from swath.messages.model import decode_body
from swath.messages.validation import InvalidMessage

if TYPE_CHECKING:  # the harvest engine loads only for the commands that run one
    from swath.harvesters.embedded import Sent


def read_message(source: str, *, as_json: bool = False) -> JSONObject:
    """A message from a JSON file, or '-' for stdin. One it cannot read is a usage error (exit 2), with --json
    also {"error": {"code", "message"}} on stdout, as every other refusal of `harvest run` and `export run`."""

    def refuse(code: str, message: str) -> NoReturn:
        if as_json:
            click.echo(json.dumps({"error": {"code": code, "message": message}}))
        raise click.UsageError(message)

    try:
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as exc:
        refuse(codes.BAD_REQUEST, f"cannot read message {source!r}: {exc.strerror}")
    try:
        body = decode_body(raw)
    except InvalidMessage as exc:
        refuse(exc.code, f"{source}: {exc}")
    if not isinstance(body, dict):
        refuse(codes.SCHEMA_INVALID, f"{source}: a message is a JSON object")
    return body


class SwathGroup(click.Group):
    """Any SwathError a command lets through (a start-up mistake: data root, SWATH_AMQP_URL, SWATH_DB_URL) is one
    coded line and exit 1; its traceback only under --debug."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except SwathError as exc:
            if ctx.params.get("debug"):
                raise
            click.echo(error_line(exc.code, exc.message), err=True)
            ctx.exit(1)


@click.group(cls=SwathGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--data-root", type=click.Path(file_okay=False, path_type=Path), envvar="SWATH_DATA_ROOT",
              help="Where WARCs, state and exports live (SWATH_DATA_ROOT; default $XDG_DATA_HOME/swath, "
                   "else ~/.local/share/swath). `swath config` prints it.")
@click.option("--log-level", default="INFO", show_default=True,
              type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"], case_sensitive=False),
              help="Log verbosity; logs go to stderr.")
@click.option("--debug", is_flag=True, help="Log at DEBUG with tracebacks and the broker client's own lines.")
@click.version_option(package_name="swath")
@click.pass_context
def cli(ctx: click.Context, data_root: Path | None, log_level: str, debug: bool) -> None:
    """Harvest social media and metadata into WARC files, and export them for research.

    Start with `swath demo`, which harvests a local replay of a blog's posts into a WARC and exports
    it to CSV, with no broker. `swath harvest run` and `swath export run` take the very SFM messages
    a worker takes; `swath worker NAME` runs a worker service against RabbitMQ.
    """
    from swath.core.loglines import log_to_stderr

    log_to_stderr("DEBUG" if debug else log_level.upper())  # a record's second line never starts at the margin
    from swath.messages.broker_errors import quiet_pika_logs

    quiet_pika_logs(debug=debug)  # broker errors are told in one line; pika's own lines only under --debug
    from swath.harvesters.redaction import install_log_filter  # here: `swath --help` stays light

    install_log_filter()  # every record reaching stderr is redacted, whichever library logged it
    # --data-root acts as SWATH_DATA_ROOT, so the default store (SWATH_DB_URL unset) moves with it
    config = Config.from_env({**os.environ, "SWATH_DATA_ROOT": str(data_root.absolute())} if data_root else None)
    if data_root is not None:
        if not data_root.is_absolute():  # resolved once, here: say where, so a second archive is noticed
            click.echo(f"swath: data root {config.data_root} ({str(data_root)!r} is relative to the current "
                       "directory)", err=True)
    ctx.obj = config


# ---------------------------------------------------------------- harvest


@cli.group()
def harvest() -> None:
    """Run harvests and list harvest types."""


@harvest.command("run")
@click.argument("message")
@click.option("--json", "as_json", is_flag=True,
              help='Also print a refusal (invalid message, already finished) as {"error": ...} on stdout.')
@click.option("--retry", is_flag=True,
              help="If this harvest ended in failure, run it again as <id>.retry-N (the collection's state carries "
                   "on); a finished success still exits 4.")
@click.pass_context
def harvest_run(ctx: click.Context, message: str, as_json: bool, retry: bool) -> None:
    """Run the harvest.start MESSAGE (a JSON file, or - for stdin) in this process, no broker.

    MESSAGE may also name a validated harvest source (as udata's `harvest run SOURCE` does): that is
    `swath harvest launch SOURCE --sync`, recorded as a job.

    Prints every message a worker would publish (statuses, warc_created) as JSON lines on stdout:
    {"routing_key": ..., "message": ...}. Exits 0 on `completed success`, 1 on `completed failure`,
    2 on an invalid message, 3 when interrupted (run it again to resume), 4 when this harvest id
    already finished (nothing harvested; use a new id). The first Ctrl-C stops a stream harvest
    cleanly (everything kept, final status) and interrupts any other harvest (resumable); it says
    which. A second Ctrl-C interrupts a stream too. With --retry, a harvest that ended in `completed failure`
    (a network outage, say) runs again under the derived id <id>.retry-N, so a cron job can re-run its message.
    """
    import threading

    from swath.harvest_job import coordination_for, tune_process  # flock and files, or the store's (s3://)
    from swath.harvesters.embedded import (
        install_signal_handlers,
        is_stream_message,
        retry_id,
        run_message,
        stderr_notice,
    )

    tune_process(config_of(ctx))
    if message != "-" and not Path(message).exists() and not message.endswith(".json"):
        from swath.commands.sources import launch

        ctx.invoke(launch, source=message, sync=True, as_json=as_json)
        return
    config = config_of(ctx)
    writable_data_root(config.data_root)
    body = read_message(message, as_json=as_json)
    coordination = coordination_for(config)
    if retry and (again := retry_id(body, config, coordination)) != body.get("id"):
        click.echo(f"swath: harvest {body.get('id')} ended in failure; retrying it as {again}", err=True)
        body["id"] = again
    stop, shutdown = threading.Event(), threading.Event()
    install_signal_handlers(stop, shutdown, stream=is_stream_message(body), notify=stderr_notice)
    ctx.exit(run_message(body, config=config, stop=stop, shutdown=shutdown, as_json=as_json,
                         coordination=coordination))


@harvest.command("types")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def harvest_types(as_json: bool) -> None:
    """List the harvest types this installation handles, with their routing keys."""
    from swath.harvesters.registry import harvester_types

    rows = [{"type": t.name, "platform": t.platform, "stream": t.stream,
             "routing_key": f"harvest.start.{t.platform}.{t.name}"} for t in harvester_types()]
    emit(rows, as_json, "\n".join(f"{r['routing_key']:<55} {'stream' if r['stream'] else 'rest'}" for r in rows))


# ---------------------------------------------------------------- export

# what the first Ctrl-C of `swath export run` does, said on stderr as `harvest run` says its own
EXPORT_STOPPING = ("stopping: the export ends within a batch of records and removes its unfinished files (exit 3); "
                   "run the same message again to export.")


@cli.group()
def export() -> None:
    """Run exports and list export types."""


@export.command("run")
@click.argument("message")
@click.option("--skip-unreadable", is_flag=True,
              help="Export the rest when a body or line cannot be read (a warning) instead of failing; "
                   "sets the message's options.skip_unreadable.")
@click.option("--json", "as_json", is_flag=True,
              help='Also print a refusal (invalid message, unknown type) as {"error": ...} on stdout.')
@click.pass_context
def export_run(ctx: click.Context, message: str, skip_unreadable: bool, as_json: bool) -> None:
    """Run the export.start MESSAGE (a JSON file, or - for stdin) in this process, no broker.
    `swath export example TYPE` prints one.

    Prints the export.status messages as JSON lines on stdout, and on stderr a progress line (WARCs read of
    those selected, items, items/s). Exits 0 on `completed success` (an empty date range the message asked for
    is a success with an `export_empty` warning), 1 on `completed failure` (including an export with nothing
    to export: `no_warcs`, `export_empty`, and unreadable bodies: `item_unreadable`), 2 on an invalid message
    or an unknown type (`error [code]: ...`, the known types listed), 3 when interrupted (Ctrl-C or SIGTERM:
    the export stops within a batch of records and removes its unfinished files). The WARCs come from the
    WARC index in the store (SWATH_DB_URL, kept by `swath monitor`), else from listing the data root (a
    `warc_index_scan` info).
    """
    from swath.commands.common import ProgressLine
    from swath.core.jobs import JobContext, JobInterrupted
    from swath.export_index import run_export
    from swath.exporters.registry import UnknownExportType, lookup
    from swath.harvesters.embedded import (
        EXIT_INTERRUPTED,
        EXIT_INVALID,
        install_signal_handlers,
        print_publish,
        stderr_notice,
    )
    from swath.messages.model import COMPLETED_SUCCESS
    from swath.messages.validation import validate

    def refuse(exc: SwathError) -> None:
        click.echo(error_line(exc.code, exc.message), err=True)
        if as_json:
            click.echo(json.dumps({"error": {"code": exc.code, "message": exc.message}}))
        ctx.exit(EXIT_INVALID)

    config = config_of(ctx)
    writable_data_root(config.data_root)
    body = read_message(message, as_json=as_json)
    options = body.setdefault("options", {}) if skip_unreadable else None
    if isinstance(options, dict):  # any other value is the schema's to refuse
        options["skip_unreadable"] = True
    try:
        if not isinstance(body.get("type"), str):  # the schema names what is missing, not "export type 'None'"
            validate("export_start", body)
        export_type = lookup(str(body.get("type")))
    except (UnknownExportType, InvalidMessage) as exc:
        refuse(exc)
    sent: list[Sent] = []
    progress = ProgressLine(sys.stderr)
    job_ctx = JobContext(config=config, publish=print_publish(sys.stdout, sent), service=export_type.service,
                         progress=progress)
    install_signal_handlers(job_ctx.stop, job_ctx.shutdown, notify=lambda _: stderr_notice(EXPORT_STOPPING))
    try:
        run_export(body, routing_key=f"export.start.{export_type.platform}.{export_type.name}", ctx=job_ctx)
    except InvalidMessage as exc:
        refuse(exc)
    except JobInterrupted:  # a second signal: stopped without a final status
        ctx.exit(EXIT_INTERRUPTED)
    finally:
        progress.close()
    statuses = [m["message"] for m in sent if m["routing_key"].startswith("export.status.")]
    if job_ctx.stop.is_set():
        ctx.exit(EXIT_INTERRUPTED)
    ctx.exit(0 if statuses and statuses[-1].get("status") == COMPLETED_SUCCESS else 1)


@export.command("types")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def export_types(as_json: bool) -> None:
    """List the export types this installation handles."""
    from swath.exporters.registry import export_types as types
    from swath.exporters.registry import lookup

    rows = [{"type": t.name, "platform": t.platform, "routing_key": f"export.start.{t.platform}.{t.name}"}
            for t in map(lookup, types())]
    emit(rows, as_json, "\n".join(r["routing_key"] for r in rows))


# ---------------------------------------------------------------- demo


@cli.command()
@click.option("--format", "fmt", default="csv", show_default=True,
              type=click.Choice(list(FORMATS)), help="Export format.")
@click.option("--json", "as_json", is_flag=True, help="Print every published message as JSON instead of a summary.")
@click.pass_context
def demo(ctx: click.Context, fmt: str, as_json: bool) -> None:
    """Harvest a local replay of a Tumblr blog into a WARC and export it, with no broker or internet.

    The real Tumblr harvester talks over HTTP to a replay of recorded API responses started on
    127.0.0.1; the real exporter reads the WARC it wrote. Everything lands under the data root.
    """
    from swath.demo import run_demo
    from swath.harvesters.embedded import terminal_progress

    config = config_of(ctx)
    writable_data_root(config.data_root)
    result = run_demo(config, fmt=fmt, progress=terminal_progress(sys.stderr))
    # validated as they were published (print_publish): the schemas say their shapes
    final_harvest = cast(HarvestStatusBody, result.harvest[-1]["message"])
    final_export = cast(StatusBody, result.export[-1]["message"])
    ok = final_harvest["status"] == final_export["status"] == "completed success"
    if as_json:
        emit({"harvest": result.harvest, "export": result.export}, True, "")
        ctx.exit(0 if ok else 1)
    warcs = [cast(WarcCreatedBody, m["message"])["warc"] for m in result.harvest if m["routing_key"] == "warc_created"]
    stats = final_harvest.get("stats", {})
    posts = sum(counts.get("posts", 0) for counts in stats.values())
    lines = [f"harvest {final_harvest['id']}: {final_harvest['status']}, {posts} posts "
             f"(the replay served {result.served_posts})"]
    lines += [f"  WARC {w['path']} ({w['bytes']} bytes, sha1 {w['sha1']})" for w in warcs]
    lines.append(f"export {final_export['id']}: {final_export['status']}")
    files = sorted(p for p in result.export_dir.glob("*") if p.is_file())
    lines += [f"  {p} ({p.stat().st_size} bytes)" for p in files]
    for note in final_harvest.get("errors", []) + final_export.get("errors", []):
        lines.append(f"  error {note['code']}: {note['message']}")
    lines.append("next: `swath harvest example TYPE > start.json` (TYPE from `swath harvest types`), then "
                 "`swath harvest run start.json`; see README.md")
    click.echo("\n".join(lines))
    ctx.exit(0 if ok else 1)


# ---------------------------------------------------------------- workers and broker


@cli.command()
@click.argument("name", required=False)
@click.option("--list", "list_", is_flag=True, help="Name the worker services instead of running one.")
@click.option("--json", "as_json", is_flag=True, help="With --list: machine-readable output.")
@click.pass_context
def worker(ctx: click.Context, name: str | None, list_: bool, as_json: bool) -> None:
    """Run the worker service NAME in the foreground against RabbitMQ (SWATH_AMQP_URL).

    It consumes its queue, acks each message after the work is done, reconnects when the broker goes
    away, and on SIGTERM/Ctrl-C finishes cleanly (unfinished work goes back to the queue).
    """
    from swath.services import UnknownService, all_services, check_platforms, service

    if list_ or not name:
        try:  # a misspelt SWATH_PLATFORMS is said, not listed as no worker at all
            check_platforms(config_of(ctx).platforms)
        except UnknownService as exc:
            raise click.UsageError(str(exc)) from None
        services = all_services(config_of(ctx).platforms)
        rows = [{"name": s.name, "service": s.service, "bindings": s.bindings, "concurrency": s.concurrency}
                for s in services.values()]
        emit(rows, as_json, "\n".join(f"{s.name:<24} {', '.join(s.bindings)}" for s in services.values()))
        if not list_:
            ctx.exit(2)
        return
    from swath.messages.worker import Worker

    try:
        spec = service(name, config_of(ctx).platforms)
    except UnknownService as exc:
        raise click.UsageError(str(exc)) from None
    config = config_of(ctx)
    if any(key.startswith(("harvest.start.", "export.start.")) for key in spec.bindings):
        writable_data_root(config.data_root)  # said once at start, not as a failure of every message taken
    if any(key.startswith("harvest.start.") for key in spec.bindings):
        from swath.harvest_job import tune_process

        tune_process(config)
    runner = Worker(config=config, spec=spec)
    runner.install_signal_handlers()
    runner.run()


def _add_command_modules(group: click.Group, parents: dict[str, click.Group]) -> None:
    """Each swath/commands module's `command` under `group`, and its `SUBCOMMANDS` under the groups named."""
    import swath.commands

    for info in pkgutil.iter_modules(swath.commands.__path__):
        module = importlib.import_module(f"swath.commands.{info.name}")
        command = getattr(module, "command", None)
        if isinstance(command, click.Command):
            group.add_command(command)
        for parent, commands in getattr(module, "SUBCOMMANDS", {}).items():
            for sub in commands:
                parents[parent].add_command(sub)


_add_command_modules(cli, {"harvest": harvest, "export": export})


def main() -> None:
    cli(prog_name="swath")
