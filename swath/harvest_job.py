"""The harvest job the worker services run: harvesters/run.py `run_harvest` with the claim and state kept where
the site's storage needs them. A data root every worker shares (the default): flock claims and state files,
chosen inside the engine. SWATH_STORAGE_URL=s3://...: the PostgreSQL store's advisory-lock claim and state
rows (swath/store/harvest_state.py), handed in from here because the engine may not import the store.
"""

from __future__ import annotations

import threading
from typing import Any

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.harvesters.coordination import Coordination, shared_filesystem
from swath.harvesters.run import run_harvest as run_engine

_made: dict[str, Coordination] = {}
_lock = threading.Lock()


def coordination_for(config: Config) -> Coordination | None:
    """None on a shared filesystem (the engine's own files); else the store's, one per store URL and process
    (its engine is a pool shared by the harvests this worker runs). It opens the store when a harvest first
    claims, so a store that fails refuses that start with its code (run.py)."""
    if shared_filesystem(config):
        return None
    with _lock:
        if config.db_url not in _made:
            from swath.store.harvest_state import PgCoordination  # only sites without a shared disk load the store

            _made[config.db_url] = PgCoordination(config=config)
        return _made[config.db_url]


def run_harvest(body: dict[str, Any], *, routing_key: str, ctx: JobContext) -> None:
    """The Job for harvest.start.<platform>.<type> messages on a worker (swath/services.py)."""
    run_engine(body, routing_key=routing_key, ctx=ctx, coordination=coordination_for(ctx.config))
