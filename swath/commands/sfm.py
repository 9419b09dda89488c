"""`swath sfm`: an SFM site brought over (docs/migrating-from-sfm.md); `import --dry-run` reads its database."""

from __future__ import annotations

import click

from swath.commands.common import JSON_OPTION, emit, handles_errors


@click.group(name="sfm")
def command() -> None:
    """An SFM site: what its sfm-ui database holds."""


@command.command(name="import")
@click.option("--db-url", required=True, metavar="URL",
              help="sfm-ui's PostgreSQL database, read-only (postgresql+psycopg2://USER@HOST/sfm; a password "
                   "is better in ~/.pgpass than here).")
@click.option("--dry-run", is_flag=True, help="Only count what there is to bring over; change nothing.")
@JSON_OPTION
@handles_errors
def import_(db_url: str, dry_run: bool, as_json: bool) -> None:
    """Count the collection sets, collections, seeds, credentials, harvests and WARCs of an SFM site, and the
    collections swath will not harvest. Only --dry-run is available yet: nothing is written."""
    from swath.harvesters.registry import harvester_types
    from swath.sfm_import import read_counts

    if not dry_run:
        raise click.UsageError("only `swath sfm import --dry-run` is available yet; re-create sources with "
                               "`swath harvest create` (docs/migrating-from-sfm.md)")
    counts = read_counts(db_url)
    data = counts.as_dict({t.name for t in harvester_types()})
    lines = [f"{name.replace('_', ' ')}: {value}" for name, value in data.items()
             if not isinstance(value, dict)]
    lines += [f"collections of type {t}: {n}" for t, n in data["collections_by_type"].items()]
    lines += [f"not harvestable by swath (their WARCs still export): {t} ({n})"
              for t, n in data["not_harvestable"].items()]
    emit(data, as_json, "\n".join(lines))
