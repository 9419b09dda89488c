"""`swath sfm`: an SFM site brought over (docs/migrating-from-sfm.md): `import` reads sfm-ui's database and
its harvest volume into swath's store (`--dry-run` only counts)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from swath.commands.common import JSON_OPTION, ProgressLine, config_of, emit, handles_errors, open_store

if TYPE_CHECKING:  # the import loads only when the command runs
    from swath.sfm_bring import ReportView


@click.group(name="sfm")
def command() -> None:
    """An SFM site: what its sfm-ui database holds, brought into swath."""


@command.command(name="import")
@click.option("--db-url", required=True, metavar="URL",
              help="sfm-ui's PostgreSQL database, read-only (postgresql+psycopg2://USER@HOST/sfm; a password "
                   "is better in ~/.pgpass than here).")
@click.option("--dry-run", is_flag=True, help="Only count what there is to bring over; change nothing.")
@JSON_OPTION
@click.pass_context
@handles_errors
def import_(ctx: click.Context, db_url: str, dry_run: bool, as_json: bool) -> None:
    """Bring an SFM site's collection sets, collections (as harvest sources, with seeds, options, schedule and
    sealed credential), harvests (as jobs) and WARCs (checked by size and sha1 against sfm-ui's rows, found under
    SWATH_HARVEST_ROOT) into swath's store. Keyed on SFM's ids: running it again changes nothing.
    --dry-run only counts what sfm-ui's database holds."""
    if dry_run:
        _dry_run(db_url, as_json)
        return
    from swath.sfm_bring import bring_over
    from swath.sfm_import import read_site
    from swath.store.secrets import SecretBox

    config = config_of(ctx)
    progress = ProgressLine(sys.stderr)
    try:
        report = bring_over(read_site(db_url), store=open_store(ctx), config=config,
                            box=SecretBox.from_config(config), progress=progress)
    finally:
        progress.close()
    data = report.as_dict()
    emit(data, as_json, _report_text(data))
    if report.warc_problems:
        ctx.exit(1)  # imported, but not everything: say so to scripts


def _dry_run(db_url: str, as_json: bool) -> None:
    from swath.harvesters.registry import harvester_types
    from swath.sfm_import import read_counts

    data = read_counts(db_url).as_dict({t.name for t in harvester_types()})
    lines = [f"{name.replace('_', ' ')}: {value}" for name, value in data.items()
             if not isinstance(value, dict)]
    lines += [f"collections of type {t}: {n}" for t, n in data["collections_by_type"].items()]
    lines += [f"not harvestable by swath (their WARCs still export): {t} ({n})"
              for t, n in data["not_harvestable"].items()]
    emit(data, as_json, "\n".join(lines))


def _report_text(data: ReportView) -> str:
    lines = [f"imported {name.replace('_', ' ')}: {n}" for name, n in data["imported"].items()]
    lines += [f"left out {name.replace('_', ' ')}: {n}" for name, n in data["left_out"].items()]
    lines += [f"already there {name.replace('_', ' ')}: {n}" for name, n in data["unchanged"].items()]
    lines += [f"skipped type {t} [{v['code']}]: {v['collections']} collection(s), {v['seeds']} seed(s), "
              f"{v['harvests']} harvest(s); their WARCs are indexed, so they export"
              for t, v in data["skipped"].items()]
    lines += [f"pending validation: {p['source']}: {p['reason']}" for p in data["pending"]]
    lines += [f"WARC not indexed [{p['code']}]: {p['message']}" for p in data["warc_problems"]]
    lines += [f"collection set {i!r} skipped [bad_request]: its id cannot be a folder name"
              for i in data["bad_collection_set_ids"]]
    lines += [f"counts differ for {c['source']}: SFM {c['sfm']}, swath {c['swath']}"
              for c in data["collections"] if not c["equal"]]
    return "\n".join(lines) or "nothing to import"
