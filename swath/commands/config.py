"""`swath config`: the effective configuration (environment, `--data-root`, defaults), secrets masked."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import click
from click.core import ParameterSource

from swath.commands.common import JSON_OPTION, config_of, emit
from swath.core.config import Config
from swath.core.storage import free_bytes

MASK = "***"
_SECRETS = {"secret_key"}  # shown as set or not, never the value
_URLS = {"amqp_url", "db_url"}  # may carry a password in their user part


def mask_url(url: str) -> str:
    """The URL (each of a comma-separated list, as SWATH_AMQP_URL may be) with the password of its user part
    replaced by ***; anything else kept."""
    if "," in url:
        return ",".join(mask_url(part) for part in url.split(","))
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:{MASK}@{host}"))


def effective(config: Config) -> dict[str, Any]:
    """Every Config field as printable values: paths as text, secrets masked."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in _SECRETS:
            value = MASK if value else ""
        elif f.name in _URLS:
            value = mask_url(value)
        elif isinstance(value, Path):
            value = str(value)
        elif not isinstance(value, str | int | float | bool):
            value = dict(value)
        out[f.name] = value
    return out


def data_root_origin(ctx: click.Context) -> str:
    """Where the data root came from: the option, SWATH_DATA_ROOT, or the default."""
    source = ctx.find_root().get_parameter_source("data_root")
    if source is ParameterSource.COMMANDLINE:
        return "--data-root"
    if source is ParameterSource.ENVIRONMENT:
        return "SWATH_DATA_ROOT"
    return "the default: $XDG_DATA_HOME/swath, else ~/.local/share/swath"


@click.command("config")
@JSON_OPTION
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> None:
    """Print the effective configuration (secrets masked): where data goes, the broker, the store."""
    config = config_of(ctx)
    values = effective(config)
    origin = data_root_origin(ctx)
    free = free_bytes(config.data_root)  # of the filesystem holding it (its nearest existing folder)
    width = max(map(len, values))
    lines = [f"{name:<{width}}  {value}" + (f"  (from {origin})" if name == "data_root" else "")
             for name, value in values.items()]
    lines.insert(list(values).index("data_root") + 1, f"{'':<{width}}  {free_space_line(free, config.min_free_bytes)}")
    emit({**values, "data_root_from": origin, "data_root_free_bytes": free}, as_json, "\n".join(lines))


def free_space_line(free: int | None, minimum: int) -> str:
    if free is None:
        return "free space: unknown (the data root cannot be reached)"
    below = "  BELOW SWATH_MIN_FREE_BYTES: harvests and exports will not start" if free < minimum else ""
    return f"free space: {free / 2**30:.1f} GiB ({free} bytes){below}"
