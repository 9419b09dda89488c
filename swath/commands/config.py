"""`swath config`: the effective configuration (environment, `--data-root`, defaults), secrets masked."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import click
from click.core import ParameterSource

from swath.commands.common import JSON_OPTION, config_of, emit
from swath.core.config import SFM_EXPORT_ROOT, SFM_HARVEST_ROOT, Config
from swath.core.masking import MASK, mask_text, mask_url, masked
from swath.core.storage import below_minimum, free_bytes
from swath.site_check import problems

__all__ = ["MASK", "command", "effective", "mask_url"]  # mask_url: its old home (the one is core/masking.py)

# shown as set or not, never the value
_SECRETS = {"secret_key", "dashboard_token", "storage_access_key_id", "storage_secret_access_key",
            "storage_replica_access_key_id", "storage_replica_secret_access_key"}


def effective(config: Config) -> dict[str, object]:
    """Every Config field as printable values: paths as text, secrets masked."""
    out: dict[str, object] = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        if f.name in _SECRETS:
            value = MASK if value else ""
        elif isinstance(value, str):
            value = mask_text(value)  # any setting may be a URL (SWATH_DB_URL, SWATH_<PLATFORM>_API_URL)
        elif isinstance(value, Path):
            value = str(value)
        elif isinstance(value, tuple):
            value = [mask_text(v) if isinstance(v, str) else v for v in value]
        elif value is None:
            value = ""
        elif not isinstance(value, int | float | bool):
            value = masked(dict(value))
        out[f.name] = value
    out["harvest_root"], out["export_root"] = str(config.harvest_base), str(config.export_base)
    return out


def root_origin(config: Config, which: str) -> str:
    """Where the harvest or export root came from: its variable, SFM's volume (SWATH_REQUESTER=sfm), the data root."""
    given = getattr(config, f"{which}_root")
    if given is None:
        return "the data root"
    sfm_default = {"harvest": SFM_HARVEST_ROOT, "export": SFM_EXPORT_ROOT}[which]
    if config.requester == "sfm" and given == sfm_default:
        return "sfm-docker's volume (SWATH_REQUESTER=sfm)"
    return f"SWATH_{which.upper()}_ROOT"


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
@click.option("--check", is_flag=True, help="Say what is wrong for the requester chosen (SWATH_REQUESTER); "
              "exit 1 if anything is.")
@click.pass_context
def command(ctx: click.Context, as_json: bool, check: bool) -> None:
    """Print the effective configuration (secrets masked): where data goes, the broker, the store."""
    config = config_of(ctx)
    if check:
        found = problems(config)
        emit({"requester": config.requester, "problems": found}, as_json,
             "\n".join(found) or f"nothing wrong for SWATH_REQUESTER={config.requester}")
        ctx.exit(1 if found else 0)
    values = effective(config)
    origins = {"data_root": data_root_origin(ctx), "harvest_root": root_origin(config, "harvest"),
               "export_root": root_origin(config, "export")}
    free = free_bytes(config.data_root)  # of the filesystem holding it (its nearest existing folder)
    width = max(map(len, values))
    lines = [f"{name:<{width}}  {value}" + (f"  (from {origins[name]})" if name in origins else "")
             for name, value in values.items()]
    lines.insert(list(values).index("data_root") + 1, f"{'':<{width}}  {free_space_line(free, config.min_free_bytes)}")
    emit({**values, **{f"{name}_from": origin for name, origin in origins.items()}, "data_root_free_bytes": free},
         as_json, "\n".join(lines))


def free_space_line(free: int | None, minimum: int) -> str:
    if free is None:
        return "free space: unknown (the data root cannot be reached)"
    below = "  BELOW SWATH_MIN_FREE_BYTES: harvests and exports will not start" if below_minimum(free, minimum) else ""
    return f"free space: {free / 2**30:.1f} GiB ({free} bytes){below}"
