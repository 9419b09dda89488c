"""`swath config`: the effective configuration (environment, `--data-root`, defaults), secrets masked."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from swath.commands.common import JSON_OPTION, config_of, emit
from swath.core.config import Config
from swath.core.masking import MASK, mask_text, mask_url, masked

__all__ = ["MASK", "command", "effective", "mask_url"]  # mask_url: its old home (the one is core/masking.py)

_SECRETS = {"secret_key"}  # shown as set or not, never the value


def effective(config: Config) -> dict[str, Any]:
    """Every Config field as printable values: paths as text, secrets masked."""
    out: dict[str, Any] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in _SECRETS:
            value = MASK if value else ""
        elif isinstance(value, str):
            value = mask_text(value)  # any setting may be a URL (SWATH_DB_URL, SWATH_<PLATFORM>_API_URL)
        elif isinstance(value, Path):
            value = str(value)
        elif not isinstance(value, int | float | bool):
            value = masked(dict(value))
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
    values = effective(config_of(ctx))
    origin = data_root_origin(ctx)
    width = max(map(len, values))
    lines = [f"{name:<{width}}  {value}" + (f"  (from {origin})" if name == "data_root" else "")
             for name, value in values.items()]
    emit({**values, "data_root_from": origin}, as_json, "\n".join(lines))
