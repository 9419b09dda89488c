"""`swath harvest update SOURCE`: change a source's seeds or options, checked as `harvest create` checks them."""

from __future__ import annotations

import click

from swath import source_settings
from swath.commands.common import JSON_OPTION, emit, handles_errors, open_store
from swath.shared.records import source_dict
from swath.source_settings import parse_options, seeds_from
from swath.store import repo
from swath.store.models import PENDING


@click.command()
@click.argument("source")
@click.option("--seed", "seed_tokens", multiple=True, help="A seed token; repeatable. Given seeds replace them all.")
@click.option("--seed-uid", "seed_uids", multiple=True, help="A seed given by uid; repeatable (replaces, as --seed).")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="Set a harvest option, read by the type its schema declares. Repeatable.")
@click.option("--unset-option", "unset", multiple=True, metavar="KEY", help="Remove a harvest option. Repeatable.")
@JSON_OPTION
@click.pass_context
@handles_errors
def update(ctx: click.Context, source: str, seed_tokens: tuple[str, ...], seed_uids: tuple[str, ...],
           options: tuple[str, ...], unset: tuple[str, ...], as_json: bool) -> None:
    """Change SOURCE's seeds or options, checked as `create` checks them; an accepted source goes back to
    pending validation (credentials: delete and create the source again)."""
    with open_store(ctx).session() as s:
        src = repo.find_source(s, source)
        src, changed = source_settings.update(s, source, options=parse_options(src.harvest_type, options),
                                              unset=unset, seeds=seeds_from(seed_tokens, seed_uids))
        data = source_dict(src)
    emit(data, as_json, f"source {data['name']} " + (f"updated; {data['validation']}" if changed else "unchanged")
         + (f"; next: swath harvest validate {data['name']}" if changed and data["validation"] == PENDING else ""))


# what `swath harvest` and `swath export` (swath/cli.py) hold from this module
SUBCOMMANDS: dict[str, list[click.Command]] = {"harvest": [update]}
