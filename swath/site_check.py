"""`swath config --check`: what in the effective settings is wrong for the requester chosen (SWATH_REQUESTER),
one line each saying what to change."""

from __future__ import annotations

import os
from pathlib import Path

from swath.core.config import DEFAULT_EXCHANGE, Config


def problems(config: Config) -> list[str]:
    """Each setting that does not fit the site, as a line naming the variable and what to do."""
    from swath.services import unknown_platforms

    found = [f"SWATH_PLATFORMS names {name}: neither a platform nor a type (`swath harvest types`, "
             "`swath export types`)" for name in unknown_platforms(config.platforms)]
    found += _roots(config)
    if config.storage_url and config.storage_url.startswith("s3://") and not config.db_url.startswith("postgresql"):
        found.append("SWATH_STORAGE_URL is object storage, so harvest claims and state are kept in PostgreSQL: set "
                     "SWATH_DB_URL to a postgresql:// URL every worker reaches (each start is refused until then)")
    if config.requester == "sfm":
        found += _sfm(config)
    elif not config.status_queue:
        found.append("SWATH_STATUS_QUEUE is empty but SWATH_REQUESTER=swath: no queue keeps statuses for swath's "
                     "monitor; unset it (or set SWATH_REQUESTER=sfm when sfm-ui reads the statuses)")
    return found


def _roots(config: Config) -> list[str]:
    found = []
    for setting, root in (("SWATH_HARVEST_ROOT", config.harvest_root), ("SWATH_EXPORT_ROOT", config.export_root)):
        if root is not None and not os.path.isdir(root):
            found.append(f"{setting}={root} is not a directory here; mount the volume there or change {setting}")
    harvests, exports = Path(os.path.realpath(config.harvest_base)), Path(os.path.realpath(config.export_base))
    if harvests != exports and (harvests.is_relative_to(exports) or exports.is_relative_to(harvests)):
        found.append(f"the harvest root {harvests} and the export root {exports} lie one inside the other; "
                     "give them separate folders (or one SWATH_DATA_ROOT for both)")
    return found


def _sfm(config: Config) -> list[str]:
    found = []
    if config.status_queue:
        found.append(f"SWATH_STATUS_QUEUE={config.status_queue} with SWATH_REQUESTER=sfm: sfm-ui reads statuses from "
                     "its own sfm_ui queue and nothing empties this one; unset SWATH_STATUS_QUEUE")
    if not config.queue_prefix:
        found.append("SWATH_QUEUE_PREFIX is empty with SWATH_REQUESTER=sfm: swath's queue names (flickr_harvester, "
                     "tumblr_exporter, ...) are SFM's own, so both suites would share one queue; set "
                     "SWATH_QUEUE_PREFIX=swath_")
    if config.exchange != DEFAULT_EXCHANGE:
        found.append(f"SWATH_EXCHANGE={config.exchange}: sfm-ui publishes on {DEFAULT_EXCHANGE}; unset SWATH_EXCHANGE")
    return found
