"""The Operations page's processes and disk: workers and exporters by their last status (their heartbeat) with
its age, a replaced process (same service and host, newer instance) only for a while, the data root's free space;
with object storage, the replication lag and the last `swath storage verify` (swath/replicas.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import TypedDict

from swath.core.masking import mask_url
from swath.core.storage import below_minimum, free_bytes
from swath.store import notify_repo, storage_repo
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
    storage: ObjectStorage | None


class ObjectStorage(TypedDict):
    """The object stores (masked), the replication lag and the last verification."""

    primary: str
    replica: str | None
    lag: storage_repo.Lag | None  # None without a replica
    last: dict[str, object] | None


def services_and_disk(ctx: Ctx) -> ServicesAndDisk:
    config = ctx.web.config
    with ctx.store.session() as s:
        seen = notify_repo.services_seen(s)
        s.expunge_all()  # the rows are read after the session closes
    free = free_bytes(config.data_root)
    return {"services": seen, "replaced_after": notify_repo.REPLACED_AFTER, "data_root": config.data_root,
            "free": free, "min_free": config.min_free_bytes,
            "free_low": below_minimum(free, config.min_free_bytes), "storage": object_storage(ctx)}


def object_storage(ctx: Ctx) -> ObjectStorage | None:
    """The stores, the replication lag (WARCs not yet copied to the replica, the oldest one's age) and the last
    verification; None when WARCs are on the local filesystem (nothing to show)."""
    config = ctx.web.config
    if not config.storage_url and not config.storage_replica_url:
        return None
    with ctx.store.session() as s:
        lag = storage_repo.replication_lag(s) if config.storage_replica_url else None
        check = storage_repo.last_check(s)
        last: dict[str, object] | None = None if check is None else {
            "finished_at": check.finished_at, "collection_id": check.collection_id, "deep": check.deep,
            "warcs": check.warcs, "copies": check.copies, "ok": check.ok, "missing": check.missing,
            "differs": check.differs}
    return ObjectStorage(primary=mask_url(config.storage_url) if config.storage_url else str(config.harvest_base),
                         replica=mask_url(config.storage_replica_url) if config.storage_replica_url else None,
                         lag=lag, last=last)
