"""`swath harvest jobs` (job history) and `swath export start|status|list`."""

from __future__ import annotations

from typing import TypedDict

import click

from swath.commands.common import (
    JSON_OPTION,
    emit,
    handles_errors,
    open_requester,
    open_store,
)
from swath.commands.grouping import GROUP_OPTION, export_owner, record_export
from swath.exporters.writers import FORMATS
from swath.messages.bodies import NoteBody
from swath.shared.records import JobView, job_dict
from swath.store import repo
from swath.store.models import Export, as_utc


def _job_lines(d: JobView) -> list[str]:
    totals = ", ".join(f"{n} {label}" for label, n in sorted(d["totals"].items())) or "no items"
    lines = [f"{d['id']}  {d['status']:<17} {d['trigger']:<8} started {d['date_started'] or '-'}  "
             f"ended {d['date_ended'] or '-'}",
             f"    {totals}; {d['warcs']['count']} WARC(s), {d['warcs']['bytes']} bytes"]
    lines += [f"    error [{n['code']}] {n['message']}" for n in d["errors"]]
    lines += [f"    warning [{n['code']}] {n['message']}" for n in d["warnings"]]
    lines += [f"    WARC {w['path']} ({w['bytes']} bytes, sha1 {w['sha1']})" for w in d["warcs"]["files"]]
    return lines


@click.command()
@click.argument("source", required=False)
@click.option("--status", default=None, help='Only jobs in this state (e.g. running, "completed failure").')
@click.option("--limit", default=20, show_default=True, help="Most recent jobs shown.")
@JSON_OPTION
@click.pass_context
@handles_errors
def jobs(ctx: click.Context, source: str | None, status: str | None, limit: int, as_json: bool) -> None:
    """Job history (of SOURCE, or all): status, dates, stats, warnings/errors and WARCs."""
    with open_store(ctx).session() as s:
        source_id = repo.find_source(s, source, deleted=True).id if source else None
        rows = repo.list_jobs(s, source_id=source_id, status=status, limit=limit)
        files = repo.warcs_of(s, [j.id for j in rows])
        data = [job_dict(j, files[j.id]) for j in rows]
    emit(data, as_json, "\n".join(line for d in data for line in _job_lines(d)) or "no jobs")


class ExportView(TypedDict):
    """An export as `swath export` prints it."""

    id: str
    type: str | None
    format: str | None
    path: str | None
    collection: str | None
    status: str
    created_at: str | None
    date_started: str | None
    date_ended: str | None
    infos: list[NoteBody]
    warnings: list[NoteBody]
    errors: list[NoteBody]
    extra: dict[str, object]


def export_dict(export: Export) -> ExportView:
    return {"id": export.id, "type": export.export_type, "format": export.format, "path": export.path,
            "collection": export.collection_id, "status": export.status, "created_at": as_utc(export.created_at),
            "date_started": export.date_started, "date_ended": export.date_ended, "infos": export.infos,
            "warnings": export.warnings, "errors": export.errors, "extra": export.extra}


@click.command("start")
@click.argument("export_type")
@click.option("--collection", default=None, help="Export this collection id.")
@click.option("--source", "source", default=None, help="Export the collection of this harvest source.")
@click.option("--seed-uid", "seed_uids", multiple=True, help="Export these seed uids instead of a collection.")
@click.option("--format", "fmt", default="csv", show_default=True,
              type=click.Choice(list(FORMATS)))
@click.option("--path", default=None, help="Directory under the data root (default exports/<export id>).")
@click.option("--dedupe", is_flag=True, help="Drop duplicate items.")
@click.option("--segment-size", type=int, default=None, help="Items per file (default: one file).")
@click.option("--item-date-start", default=None, metavar="DATE",
              help="Only items dated from then (ISO 8601, 2024-01-31T00:00:00Z; no offset: UTC).")
@click.option("--item-date-end", default=None, metavar="DATE", help="Only items dated until then (inclusive).")
@click.option("--harvest-date-start", default=None, metavar="DATE",
              help="Only what was harvested from then (the WARC record date).")
@click.option("--harvest-date-end", default=None, metavar="DATE", help="Only what was harvested until then.")
@click.option("--skip-unreadable", is_flag=True,
              help="Export the rest when a body or line cannot be read (a warning with counts) instead of failing.")
@GROUP_OPTION
@JSON_OPTION
@click.pass_context
@handles_errors
def export_start(ctx: click.Context, export_type: str, collection: str | None, source: str | None,
                 seed_uids: tuple[str, ...], fmt: str, path: str | None, dedupe: bool, segment_size: int | None,
                 item_date_start: str | None, item_date_end: str | None, harvest_date_start: str | None,
                 harvest_date_end: str | None, skip_unreadable: bool, group: str | None, as_json: bool) -> None:
    """Publish export.start for EXPORT_TYPE; `swath export status ID` follows it (the monitor records it)."""
    from swath.exporters.registry import start_routing_key

    requester = open_requester(ctx)
    owner = export_owner(requester.store, group, source, collection) if group else None  # before anything is sent
    if source:
        with requester.store.session() as s:
            collection = repo.find_source(s, source, deleted=True).collection_id
    if bool(collection) == bool(seed_uids):
        raise click.UsageError("give a --collection (or --source) or --seed-uid: one of them, not both")
    export = requester.start_export(
        export_type=export_type, fmt=fmt, collection_id=collection,
        seeds=[{"id": repo.new_id(), "uid": u} for u in seed_uids], path=path, dedupe=dedupe,
        segment_size=segment_size,
        dates={"item_date_start": item_date_start, "item_date_end": item_date_end,
               "harvest_date_start": harvest_date_start, "harvest_date_end": harvest_date_end},
        options={"skip_unreadable": True} if skip_unreadable else None)
    if owner:
        record_export(requester.store, export, owner)
    data: dict[str, object] = {**export_dict(export)}
    text = f"export {export.id} requested; files go to {export.path}"
    state = requester.queue_for(start_routing_key(export.export_type or export_type))
    if state is not None:  # as `harvest launch` says it: published fine, but nothing takes it until a worker runs
        data["queue"] = {"name": state.queue, "consumers": state.consumers, "messages": state.messages}
        if state.consumers == 0:
            data["warning"] = (f"no worker consumes queue {state.queue}: the export waits there until "
                               f"`swath worker {state.service}` runs")
            text += f"\nwarning: {data['warning']}"
    emit(data, as_json, text)


@click.command("status")
@click.argument("export_id")
@JSON_OPTION
@click.pass_context
@handles_errors
def export_status(ctx: click.Context, export_id: str, as_json: bool) -> None:
    """The recorded status of one export."""
    with open_store(ctx).session() as s:
        data = export_dict(repo.get_export(s, export_id))
    lines = [f"export {data['id']} ({data['type']}, {data['format']}): {data['status']}", f"    path {data['path']}"]
    for kind, notes in (("error", data["errors"]), ("warning", data["warnings"]), ("info", data["infos"])):
        lines += [f"    {kind} [{n['code']}] {n['message']}" for n in notes]
    emit(data, as_json, "\n".join(lines))


@click.command("list")
@click.option("--limit", default=20, show_default=True, help="Most recent exports shown.")
@JSON_OPTION
@click.pass_context
@handles_errors
def export_list(ctx: click.Context, limit: int, as_json: bool) -> None:
    """Recent exports and their status."""
    with open_store(ctx).session() as s:
        data = [export_dict(e) for e in repo.list_exports(s, limit=limit)]
    emit(data, as_json, "\n".join(f"{d['id']}  {d['status']:<17} {d['type']:<20} {d['path']}" for d in data)
         or "no exports")


# what `swath harvest` and `swath export` (swath/cli.py) hold from this module
SUBCOMMANDS: dict[str, list[click.Command]] = {"harvest": [jobs],
                                               "export": [export_start, export_status, export_list]}
