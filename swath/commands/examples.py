"""`swath harvest example TYPE` / `swath export example TYPE`: a complete harvest.start or export.start for any
type, ready for `swath harvest run` / `swath export run`.

Built from the type's declaration (core/platforms.py): its example seeds, the options that have a default,
a placeholder for each credential it needs, and a path under this installation's data root, so the
printed message runs as it is wherever the data root is. An export example exports the collection the harvest
example of the same type harvests into.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import click
import orjson

from swath.commands.common import config_of, handles_errors
from swath.core.config import Config
from swath.messages import codes, settings
from swath.messages.model import ExportStart, HarvestStart
from swath.messages.validation import InvalidMessage
from swath.requester import RequestError
from swath.source_settings import parse_options

EXAMPLE_SET = "examples"  # the collection set every example harvests into: collections/examples/<type>
PLACEHOLDER_SEED = "https://data.example.org/"  # a backend plugin's type declares no example seed


def example_start(harvest_type: str, config: Config, *, seeds: tuple[str, ...] = (),
                  options: dict[str, Any] | None = None, harvest_id: str | None = None) -> dict[str, Any]:
    """The example harvest.start of `harvest_type` (UnknownHarvestType when no harvester has it)."""
    from swath.harvesters.registry import lookup

    lookup(harvest_type)  # an unknown type is refused with the known ones listed
    found = settings.declaration(harvest_type)
    body: dict[str, Any] = {
        "id": harvest_id or f"example-{harvest_type}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}",
        "type": harvest_type,
        "path": str(config.harvest_base / "collections" / EXAMPLE_SET / harvest_type),
    }
    if found is None:
        body["seeds"] = [{"id": f"seed-{i}", "token": t} for i, t in enumerate(seeds or (PLACEHOLDER_SEED,), 1)]
        if options:
            body["options"] = options
    else:
        platform, kind = found
        example = [dict(seed) for seed in kind.seeds.example]
        api_root = platform.api_root(config)
        if kind.seeds.token == "url" and api_root:  # SWATH_<PLATFORM>_API_URL set: harvest that endpoint
            example = [{**seed, "token": api_root} for seed in example[:1]]
        if seeds:
            example = [{"id": f"seed-{i}", "token": t} for i, t in enumerate(seeds, 1)]
        if example:
            body["seeds"] = example
        defaults = {key: spec["default"] for key, spec in platform.options.get("properties", {}).items()
                    if "default" in spec}
        if defaults or options:
            body["options"] = {**defaults, **(options or {})}
        if platform.credentials:
            body["credentials"] = {name: f"YOUR_{name.upper()}" for name in platform.credentials[0]}
    body["collection_set"] = {"id": EXAMPLE_SET}
    body["collection"] = {"id": harvest_type}
    return body


def example_export(export_type: str, config: Config, *, fmt: str = "csv",
                   export_id: str | None = None) -> dict[str, Any]:
    """The example export.start of `export_type` (UnknownExportType, listing the known ones, when none has it)."""
    from swath.exporters.registry import lookup

    lookup(export_type)
    export_id = export_id or f"example-export-{export_type}-{dt.datetime.now(dt.UTC):%Y%m%dT%H%M%S}"
    return {"id": export_id, "type": export_type, "collection": {"id": export_type},
            "path": str(config.data_root / "exports" / export_id), "format": fmt, "dedupe": True,
            "segment_size": None}


@click.command()
@click.argument("harvest_type", metavar="TYPE")
@click.option("--seed", "seeds", multiple=True, help="Seed token to use instead of the example's; repeatable.")
@click.option("--option", "options", multiple=True, metavar="KEY=VALUE",
              help="An option to add, read by its declared type (as `harvest create` reads it). Repeatable.")
@click.option("--id", "harvest_id", default=None, help="The harvest id (default: example-TYPE-<UTC time>, new "
                                                        "each time, so each run is a new harvest).")
@click.pass_context
@handles_errors
def example(ctx: click.Context, harvest_type: str, seeds: tuple[str, ...], options: tuple[str, ...],
            harvest_id: str | None) -> None:
    """Print a complete harvest.start for TYPE (`swath harvest types`): example seeds, the options that have
    a default, placeholder credentials (YOUR_<NAME>: put real ones in), a path under the data root.

    \b
    swath harvest example ckan > start.json && swath harvest run start.json
    """
    body = example_start(harvest_type, config_of(ctx), seeds=seeds, options=parse_options(harvest_type, options),
                         harvest_id=harvest_id)
    filled = {name: "x" for name in body.get("credentials", {})}  # the placeholders are the reader's to fill
    try:  # what it prints must run: an --option or --seed the type refuses is said here
        HarvestStart.from_dict({**body, **({"credentials": filled} if filled else {})})
    except InvalidMessage as exc:
        raise RequestError(exc.message, code=codes.BAD_REQUEST) from None
    click.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())


@click.command("example")
@click.argument("export_type", metavar="TYPE")
@click.option("--format", "fmt", default="csv", show_default=True, help="An export format (as `swath demo --format`).")
@click.option("--id", "export_id", default=None, help="The export id (default: example-export-TYPE-<UTC time>).")
@click.pass_context
@handles_errors
def export_example(ctx: click.Context, export_type: str, fmt: str, export_id: str | None) -> None:
    """Print a complete export.start for TYPE (`swath export types`): the collection `swath harvest example TYPE`
    harvests into, deduplicated, written to <data root>/exports/<id>.

    \b
    swath export example ckan > export.json && swath export run export.json
    """
    from swath.exporters.writers import FORMATS

    if fmt not in FORMATS:
        raise RequestError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}", code=codes.UNSUPPORTED_EXPORT_FORMAT)
    body = example_export(export_type, config_of(ctx), fmt=fmt, export_id=export_id)
    try:  # what it prints must run: a format or id the schema refuses is said here
        ExportStart.from_dict(body)
    except InvalidMessage as exc:
        raise RequestError(exc.message, code=codes.BAD_REQUEST) from None
    click.echo(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())


# what `swath harvest` and `swath export` (swath/cli.py) hold from this module
SUBCOMMANDS: dict[str, list[click.Command]] = {"harvest": [example], "export": [export_example]}
