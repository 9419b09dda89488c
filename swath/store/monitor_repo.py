"""What the monitor records from the messages it consumes: harvest and export statuses, warc_created and the
messages it refused; each an idempotent upsert, as a redelivery or a second monitor replica may record the same
message again. Each takes an open Session (one transaction, see Store.session), as swath/store/repo.py's do."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from swath.messages.bodies import HarvestStatusBody, StatusBody
from swath.messages.routing import parse as parse_key
from swath.store.models import CANCELLED, FAILURE, QUEUED, RUNNING, SUCCESS, Export, Job, Rejected, Warc, utcnow

# A status never goes back: a late "running" after the final status (redelivery, reordering) is ignored.
# A cancelled job stays cancelled; what its worker still reports (it had started it) is recorded beside.
_RANK = {QUEUED: 0, RUNNING: 1, SUCCESS: 2, FAILURE: 2, CANCELLED: 3}

_Row = TypeVar("_Row")


def record_harvest_status(s: Session, body: HarvestStatusBody, *, routing_key: str) -> Job:
    """Upsert the job from a validated harvest.status body; idempotent and never regresses the status."""
    job = s.get(Job, body["id"])
    if job is None:  # launched elsewhere (an SFM UI, `swath harvest run`): still worth a history row
        job = insert_or_get(s, Job, body["id"], lambda: Job(
            id=body["id"], source_id=None, harvest_type=parse_key(routing_key).type, routing_key=routing_key,
            trigger="external", status=QUEUED, published_at=utcnow()))
    if job.published_at is None:  # the start went out but its confirm was never recorded: not in the outbox
        job.published_at = utcnow()
    cancelled = job.status == CANCELLED
    if not cancelled and _RANK.get(body["status"], 1) < _RANK.get(job.status, 0):
        return job
    if not cancelled:
        job.status = body["status"]
    job.date_started = body.get("date_started") or job.date_started
    job.date_ended = body.get("date_ended") or job.date_ended
    for name in ("stats", "infos", "warnings", "errors", "token_updates", "uids"):
        if name in body:
            setattr(job, name, body[name])
    warcs = body.get("warcs")
    if warcs:
        job.warcs_count = int(warcs.get("count", job.warcs_count))
        job.warcs_bytes = int(warcs.get("bytes", job.warcs_bytes))
    job.service, job.host, job.instance = body.get("service"), body.get("host"), body.get("instance")
    job.updated_at = utcnow()
    return job


def record_warc(s: Session, *, warc_id: str, path: str, sha1: str, size: int, date_created: str,
                collection_set_id: str, collection_id: str, harvest_id: str, harvest_type: str) -> Warc:
    def build() -> Warc:
        return Warc(id=warc_id, path=path, sha1=sha1, bytes=size, date_created=date_created,
                    collection_set_id=collection_set_id, collection_id=collection_id, harvest_id=harvest_id,
                    harvest_type=harvest_type)

    row = s.get(Warc, warc_id) or insert_or_get(s, Warc, warc_id, build)
    row.path, row.sha1, row.bytes = path, sha1, size  # a redelivery carries the same values
    return row


def record_export_status(s: Session, body: StatusBody, *, routing_key: str) -> Export:
    export = s.get(Export, body["id"]) or insert_or_get(s, Export, body["id"], lambda: Export(
        id=body["id"], export_type=parse_key(routing_key).type, status=QUEUED))
    if _RANK.get(body["status"], 1) < _RANK.get(export.status, 0):
        return export
    known = {"id", "status", "date_started", "date_ended", "infos", "warnings", "errors", "service", "host",
             "instance"}
    export.status = body["status"]
    export.date_started = body.get("date_started") or export.date_started
    export.date_ended = body.get("date_ended") or export.date_ended
    export.infos, export.warnings, export.errors = body["infos"], body["warnings"], body["errors"]
    export.extra = {k: v for k, v in body.items() if k not in known}
    export.service = body.get("service")
    export.updated_at = utcnow()
    return export


def record_rejected(s: Session, *, digest: str, routing_key: str, code: str, message: str) -> None:
    if s.get(Rejected, digest) is None:
        insert_or_get(s, Rejected, digest, lambda: Rejected(digest=digest, routing_key=routing_key, code=code,
                                                               message=message[:2000]))


def insert_or_get(s: Session, model: type[_Row], key: object, build: Callable[[], _Row]) -> _Row:
    """Insert in a savepoint; if another monitor replica inserted the same key first, use its row."""
    try:
        with s.begin_nested():
            row = build()
            s.add(row)
        return row
    except IntegrityError:
        found = s.get(model, key)
        if found is None:
            raise
        return found


def rejected(s: Session, *, limit: int = 20) -> tuple[int, list[Rejected]]:
    """How many messages were refused, and the newest `limit` of them."""
    total = s.scalar(select(func.count()).select_from(Rejected)) or 0
    rows = list(s.scalars(select(Rejected).order_by(Rejected.seen_at.desc()).limit(limit)))
    return int(total), rows
