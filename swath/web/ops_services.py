"""The Operations page's processes and disk: workers and exporters by their last status (their heartbeat) with
its age, a replaced process (same service and host, newer instance) only for a while, the data root's free space."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TypedDict

from swath.core.storage import below_minimum, free_bytes
from swath.store import notify_repo
from swath.store.notify_repo import Seen
from swath.web.views import Ctx


class ServicesAndDisk(TypedDict):
    """What the Operations page shows of the workers and the disk."""

    services: list[Seen]
    replaced_after: dt.timedelta
    data_root: Path
    free: int | None
    min_free: int
    free_low: bool


def services_and_disk(ctx: Ctx) -> ServicesAndDisk:
    config = ctx.web.config
    with ctx.store.session() as s:
        seen = notify_repo.services_seen(s)
        s.expunge_all()  # the rows are read after the session closes
    free = free_bytes(config.data_root)
    return {"services": seen, "replaced_after": notify_repo.REPLACED_AFTER, "data_root": config.data_root,
            "free": free, "min_free": config.min_free_bytes,
            "free_low": below_minimum(free, config.min_free_bytes)}
