"""Store rows as the plain dicts every front end prints or serves (`--json`, /api, the status page)."""

from __future__ import annotations

from typing import TypedDict

from swath.messages.bodies import NoteBody
from swath.store.models import Job, Source, Warc, as_utc


class WarcFile(TypedDict):
    id: str
    path: str
    sha1: str
    bytes: int


class JobWarcs(TypedDict):
    count: int
    bytes: int
    files: list[WarcFile]


class JobView(TypedDict):
    """A job (a harvest run) as the front ends print and serve it."""

    id: str
    source_id: str | None
    type: str
    routing_key: str
    trigger: str
    status: str
    scheduled_for: str | None
    created_at: str | None
    published_at: str | None
    stop_requested_at: str | None
    date_started: str | None
    date_ended: str | None
    stats: dict[str, dict[str, int]]  # per day, per item kind (harvest.status)
    totals: dict[str, int]
    infos: list[NoteBody]
    warnings: list[NoteBody]
    errors: list[NoteBody]
    token_updates: dict[str, str]
    uids: dict[str, str]
    warcs: JobWarcs
    service: str | None
    host: str | None
    instance: str | None


def stats_total(stats: dict[str, dict[str, int]]) -> dict[str, int]:
    """Per-day stats summed per label."""
    total: dict[str, int] = {}
    for counts in stats.values():
        for label, n in counts.items():
            total[label] = total.get(label, 0) + int(n)
    return total


def job_dict(job: Job, warcs: list[Warc]) -> JobView:
    return {
        "id": job.id, "source_id": job.source_id, "type": job.harvest_type, "routing_key": job.routing_key,
        "trigger": job.trigger, "status": job.status, "scheduled_for": as_utc(job.scheduled_for),
        "created_at": as_utc(job.created_at), "published_at": as_utc(job.published_at),
        "stop_requested_at": as_utc(job.stop_requested_at),
        "date_started": job.date_started, "date_ended": job.date_ended, "stats": job.stats,
        "totals": stats_total(job.stats), "infos": job.infos, "warnings": job.warnings, "errors": job.errors,
        "token_updates": job.token_updates, "uids": job.uids,
        "warcs": {"count": job.warcs_count, "bytes": job.warcs_bytes,
                  "files": [{"id": w.id, "path": w.path, "sha1": w.sha1, "bytes": w.bytes} for w in warcs]},
        "service": job.service, "host": job.host, "instance": job.instance,
    }


def source_dict(src: Source) -> dict[str, object]:
    """A source for output: credential references only, never values."""
    return {
        "id": src.id, "name": src.name, "type": src.harvest_type, "platform": src.platform,
        "seeds": src.seeds, "options": src.options, "credentials": src.credentials,
        "collection_set": src.collection_set_id, "collection": src.collection_id,
        "validation": src.validation, "validation_comment": src.validation_comment,
        "validated_at": as_utc(src.validated_at),
        "schedule": ({"kind": src.schedule_kind, "expr": src.schedule_expr, "next_due": as_utc(src.next_due)}
                     if src.schedule_kind else None),
        "created_at": as_utc(src.created_at), "deleted_at": as_utc(src.deleted_at),
    }
