"""`swath harvest create|sources|backends|validate|launch|schedule|unschedule|stop|cancel|attach|delete|purge`.

udata's harvest namespace over swath's store and broker. The `swath harvest` group gets these
through `SUBCOMMANDS`; `swath harvest jobs` and `swath export start|status|list` live in swath/commands/jobs.py.
"""

from __future__ import annotations

import csv
from pathlib import Path

import click

from swath import source_settings
from swath.commands.common import (
    JSON_OPTION,
    config_of,
    emit,
    handles_errors,
    open_requester,
    open_store,
)
from swath.commands.credentials import credential_options, read_credentials
from swath.commands.grouping import GROUP_OPTION, create_in_group
from swath.messages import codes
from swath.purge import purge_expired, purge_sources
from swath.requester import RequestError
from swath.shared.records import job_dict, source_dict
from swath.source_settings import check_source, credential_names, parse_options, seeds_from
from swath.store import repo
from swath.store.models import ACCEPTED, CANCELLED, Source, as_utc


def _schedule_text(src: Source) -> str:
    if not src.schedule_kind:
        return "on demand"
    prefix = "every " if src.schedule_kind == "interval" else "cron "
    return f"{prefix}{src.schedule_expr} (next {as_utc(src.next_due) or '-'})"


@click.command()
@click.argument("name")
@click.option("--type", "harvest_type", required=True, help="Harvest type (`swath harvest types`).")
@click.option("--seed", "seed_tokens", multiple=True, help="A seed token (account, blog, endpoint URL); repeatable.")
@click.option("--seed-uid", "seed_uids", multiple=True, help="A seed given by uid instead of token; repeatable.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="A harvest option, VALUE read by the type the harvest type's schema declares (a list: a,b or "
                   "JSON); checked, with the seeds and credential names, before anything is stored. Repeatable.")
@credential_options
@click.option("--collection-set", default="default", show_default=True, help="Collection set id.")
@click.option("--collection", default=None, help="Collection id (default: the source id).")
@GROUP_OPTION
@JSON_OPTION
@click.pass_context
@handles_errors
def create(ctx: click.Context, name: str, harvest_type: str, seed_tokens: tuple[str, ...], seed_uids: tuple[str, ...],
           options: tuple[str, ...], credentials: tuple[str, ...], credential_files: tuple[str, ...],
           collection_set: str, collection: str | None, group: str | None, as_json: bool) -> None:
    """Create the harvest source NAME (pending validation).

    Credential values are best given by prompt (--credential NAME), file (NAME=@FILE) or environment
    reference (NAME=env:VAR), never as NAME=VALUE on a shared machine: see --credential below.
    """
    seeds = seeds_from(seed_tokens, seed_uids)
    opts = parse_options(harvest_type, options)
    # checked before a credential value is prompted for: only the names count here
    check_source(harvest_type, options=opts, seeds=seeds,
                 credentials=credential_names(credentials) + credential_names(credential_files),
                 collection_ids={"--collection-set": collection_set, "--collection": collection})
    requester = open_requester(ctx)
    refs, values = read_credentials(credentials, credential_files, before_reading=lambda _name: (
        requester.secret_box().require("the credential values given")))

    def make() -> Source:
        return requester.create_source(name=name, harvest_type=harvest_type, seeds=seeds, options=opts,
                                       credentials=refs, secrets=values, collection_set_id=collection_set,
                                       collection_id=collection)

    src = create_in_group(requester.store, group, collection_set, make) if group else make()
    emit(source_dict(src), as_json,
         f"created source {src.name} ({src.id}): {src.harvest_type}, {len(seeds)} seed(s), pending validation; "
         f"next: swath harvest validate {src.name}")


@click.command()
@click.option("--deleted", is_flag=True, help="Include soft-deleted sources.")
@JSON_OPTION
@click.pass_context
@handles_errors
def sources(ctx: click.Context, deleted: bool, as_json: bool) -> None:
    """List harvest sources with their validation state and schedule."""
    with open_store(ctx).session() as s:
        rows = repo.list_sources(s, deleted=deleted)
        data = [source_dict(src) for src in rows]
    lines = [f"{d['id']}  {d['name']:<24} {d['type']:<20} {d['validation']:<9} {_schedule_text(src)}"
             + ("  [deleted]" if d["deleted_at"] else "") for d, src in zip(data, rows)]
    emit(data, as_json, "\n".join(lines) or "no harvest sources; create one with `swath harvest create`")


@click.command()
@JSON_OPTION
def backends(as_json: bool) -> None:
    """List the metadata backends (built-in and `swath.backends` entry points), a broken one with its error."""
    from swath.harvesters.backend_plugins import describe_backends

    rows = describe_backends()
    emit(rows, as_json, "\n".join(f"{r['name']:<16} {r['origin']:<12} {r['target']}"
                                   + (f"  error: {r['error']}" if "error" in r else "") for r in rows))


@click.command()
@click.argument("source")
@click.option("--refuse", is_flag=True, help="Refuse the source instead of accepting it (needs --comment).")
@click.option("--comment", default=None, help="Why; required when refusing.")
@JSON_OPTION
@click.pass_context
@handles_errors
def validate(ctx: click.Context, source: str, refuse: bool, comment: str | None, as_json: bool) -> None:
    """Accept SOURCE so it may run (or --refuse it with a --comment)."""
    with open_store(ctx).session() as s:
        data = source_dict(source_settings.validate(s, source, refuse=refuse, comment=comment))
    emit(data, as_json, f"source {data['name']} {data['validation']}" + (f": {comment}" if comment else ""))


@click.command()
@click.argument("source")
@click.option("--sync", is_flag=True, help="Run it here, synchronously, with no broker (recorded in the store).")
@JSON_OPTION
@click.pass_context
@handles_errors
def launch(ctx: click.Context, source: str, sync: bool, as_json: bool) -> None:
    """Publish harvest.start for the validated SOURCE (or run it here with --sync)."""
    requester = open_requester(ctx)
    if sync:
        job = requester.run_here(source)
    else:
        job = requester.launch(source)
    view = job_dict(job, [])
    data: dict[str, object] = {**view}
    text = f"job {job.id}: {job.status}" + ("" if sync else f" (published {job.routing_key})")
    if sync:  # a failed run says why here, not only in `swath harvest jobs`
        text += "".join(f"\nerror [{n['code']}] {n['message']}" for n in view["errors"])
    state = None if sync else requester.worker_queue(job)
    if state is not None:
        data["queue"] = {"name": state.queue, "consumers": state.consumers, "messages": state.messages}
        if state.consumers == 0:  # published fine, but nothing will take it until a worker starts
            warning = (f"no worker consumes queue {state.queue}: the job waits there until "
                       f"`swath worker {state.service}` runs, or `swath harvest cancel {source}`")
            data["warning"] = warning
            text += f"\nwarning: {warning}"
    emit(data, as_json, text)
    if sync and job.status != "completed success":
        ctx.exit(1)


@click.command()
@click.argument("source")
@click.option("--every", default=None, metavar="INTERVAL", help="Run every INTERVAL: 30s, 15m, 6h, 1d.")
@click.option("--cron", default=None, metavar="EXPR", help='Five-field cron expression (UTC), e.g. "0 3 * * *".')
@JSON_OPTION
@click.pass_context
@handles_errors
def schedule(ctx: click.Context, source: str, every: str | None, cron: str | None, as_json: bool) -> None:
    """Run SOURCE periodically (`swath scheduler` launches it; runs never overlap)."""
    with open_store(ctx).session() as s:
        src = source_settings.schedule(s, source, every=every, cron=cron)
        data = source_dict(src)
        text = f"source {src.name} scheduled {_schedule_text(src)}"
    if data["validation"] != ACCEPTED:
        text += f"; it is {data['validation']}, so it will not run until validated"
    emit(data, as_json, text)


@click.command()
@click.argument("source")
@JSON_OPTION
@click.pass_context
@handles_errors
def unschedule(ctx: click.Context, source: str, as_json: bool) -> None:
    """Stop running SOURCE periodically (a running job goes on; `stop` ends a stream)."""
    with open_store(ctx).session() as s:
        data = source_dict(source_settings.unschedule(s, source))
    emit(data, as_json, f"source {data['name']} unscheduled")


@click.command()
@click.argument("target", metavar="SOURCE|JOB")
@JSON_OPTION
@click.pass_context
@handles_errors
def stop(ctx: click.Context, target: str, as_json: bool) -> None:
    """Publish harvest.stop for a running stream (by source, or job id); whichever replica runs it stops.

    A job still queued is cancelled instead, as `swath harvest cancel` does."""
    job = open_requester(ctx).stop(target)
    text = (f"job {job.id} was queued: cancelled" if job.status == CANCELLED else
            f"stop requested for job {job.id}; its final status follows")
    emit(job_dict(job, []), as_json, text)


@click.command()
@click.argument("target", metavar="SOURCE|JOB")
@JSON_OPTION
@click.pass_context
@handles_errors
def cancel(ctx: click.Context, target: str, as_json: bool) -> None:
    """Cancel the queued job of SOURCE (or a job id), so the source may launch again.

    A start not yet taken by a worker is removed from its queue; one a worker holds is told to stop.
    A running job whose worker is gone can be cancelled the same way."""
    done = open_requester(ctx).cancel(target)
    emit({**job_dict(done.job, []), "cancelled": done.how}, as_json, f"job {done.job.id} cancelled: {done.how}")


@click.command()
@click.argument("source")
@click.argument("csv_file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@JSON_OPTION
@click.pass_context
@handles_errors
def attach(ctx: click.Context, source: str, csv_file: Path, as_json: bool) -> None:
    """Attach existing harvested items to SOURCE's remote ids, from a CSV with columns remote_id,item_id."""
    with csv_file.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames or not {"remote_id", "item_id"} <= set(reader.fieldnames):
            raise RequestError(f"{csv_file} needs a header with remote_id and item_id columns", code=codes.BAD_REQUEST)
        pairs, bad = [], []
        for number, row in enumerate(reader, 2):
            remote_id, item_id = (row.get("remote_id") or "").strip(), (row.get("item_id") or "").strip()
            (pairs.append((remote_id, item_id)) if remote_id and item_id else bad.append(number))
    with open_store(ctx).session() as s:
        src = repo.find_source(s, source)
        new, updated = repo.attach(s, src, pairs)
    data = {"source": src.name, "attached": new, "updated": updated, "skipped_lines": bad}
    emit(data, as_json, f"{new} attached, {updated} updated"
         + (f", lines without both ids skipped: {', '.join(map(str, bad))}" if bad else ""))


@click.command()
@click.argument("source")
@JSON_OPTION
@click.pass_context
@handles_errors
def delete(ctx: click.Context, source: str, as_json: bool) -> None:
    """Soft-delete SOURCE: it stops being scheduled or launched; `purge` removes it for good."""
    with open_store(ctx).session() as s:
        src = repo.find_source(s, source)
        repo.soft_delete(s, src)
        data = source_dict(src)
    emit(data, as_json, f"source {data['name']} deleted (job history kept); `swath harvest purge` removes it")


@click.command()
@click.option("--expired", is_flag=True,
              help="Only sources deleted in the web whose retention (SWATH_PURGE_AFTER_DAYS) has ended.")
@JSON_OPTION
@click.pass_context
@handles_errors
def purge(ctx: click.Context, expired: bool, as_json: bool) -> None:
    """Permanently remove deleted sources with their WARCs (files and index rows), exports and stored
    credentials (job history stays); says how many bytes it freed."""
    config = config_of(ctx)
    with open_store(ctx).session() as s:
        done = purge_expired(s, config) if expired else purge_sources(s, config)
    emit(done.to_dict(), as_json, done.text())


# what `swath harvest` and `swath export` (swath/cli.py) hold from this module
SUBCOMMANDS: dict[str, list[click.Command]] = {"harvest": [
    create, sources, backends, validate, launch, schedule, unschedule, stop, cancel, attach, delete, purge]}
