"""Store rows as the plain dicts every front end prints or serves (`--json`, /api, the status page)."""

from __future__ import annotations

from swath.store.models import Job, Source, Warc, as_utc


def stats_total(stats: dict[str, dict[str, int]]) -> dict[str, int]:
    """Per-day stats summed per label."""
    total: dict[str, int] = {}
    for counts in stats.values():
        for label, n in counts.items():
            total[label] = total.get(label, 0) + int(n)
    return total


def job_dict(job: Job, warcs: list[Warc]) -> dict[str, object]:
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
