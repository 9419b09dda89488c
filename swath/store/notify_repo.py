"""Queries of notify_models.py: members' notification settings, who is told of an event in a group, and the
services' last reports (the Operations page's heartbeats)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from swath.messages.bodies import StatusBody
from swath.store.models import utcnow
from swath.store.monitor_repo import insert_or_get
from swath.store.notify_models import EVENT_KINDS, NotifySetting, ServiceReport
from swath.store.web_models import Membership, User

# a replaced process (same service and host, a newer instance reported) is listed this long after its last report
REPLACED_AFTER = dt.timedelta(minutes=15)

# ---------------------------------------------------------------- notification settings


def settings_of(s: Session, user_id: str) -> NotifySetting:
    """The user's settings (a fresh, unsaved row with everything off when they never chose)."""
    return s.get(NotifySetting, user_id) or NotifySetting(user_id=user_id, email="", **{k: False for k in EVENT_KINDS})


def save_settings(s: Session, user_id: str, *, email: str, kinds: Iterable[str]) -> NotifySetting:
    chosen = set(kinds)
    row = s.get(NotifySetting, user_id) or insert_or_get(s, NotifySetting, user_id, lambda: NotifySetting(
        user_id=user_id, email=email))
    row.email = email
    for kind in EVENT_KINDS:
        setattr(row, kind, kind in chosen)
    row.updated_at = utcnow()
    return row


def recipients(s: Session, group_id: str, kinds: set[str]) -> list[str]:
    """The addresses of the group's enabled members who chose any of `kinds` (each once, sorted)."""
    rows = s.execute(select(NotifySetting).join(User, User.id == NotifySetting.user_id)
                     .join(Membership, Membership.user_id == User.id)
                     .where(Membership.group_id == group_id, User.disabled_at.is_(None), NotifySetting.email != ""))
    return sorted({row.email for (row,) in rows if any(getattr(row, kind) for kind in kinds)})


# ---------------------------------------------------------------- services' reports


def report_seen(s: Session, *, role: str, body: StatusBody) -> None:
    """Record a status as its process's heartbeat; forget processes of that service and host replaced long ago."""
    service, host, instance = body.get("service"), body.get("host"), body.get("instance")
    if not (service and host and instance):
        return
    now = utcnow()
    key = (service, host, instance)
    row = s.get(ServiceReport, key) or insert_or_get(s, ServiceReport, key, lambda: ServiceReport(
        service=service, host=host, instance=instance, role=role, first_seen=now, last_seen=now,
        last_id=body["id"], last_status=body["status"]))
    row.role, row.last_seen, row.last_id, row.last_status = role, now, body["id"], body["status"]
    s.execute(delete(ServiceReport).where(ServiceReport.service == service, ServiceReport.host == host,
                                          ServiceReport.instance != instance,
                                          ServiceReport.last_seen < now - REPLACED_AFTER))


@dataclass(frozen=True)
class Seen:
    report: ServiceReport
    age: dt.timedelta
    replaced_by: str | None  # the newer instance of the same service and host, if any


def services_seen(s: Session, *, now: dt.datetime | None = None) -> list[Seen]:
    """Every worker and exporter process by its last report, newest first; a replaced one only within
    REPLACED_AFTER of its last report."""
    now = now or utcnow()
    newest: dict[tuple[str, str], str] = {}
    seen = []
    for report in s.scalars(select(ServiceReport).order_by(ServiceReport.last_seen.desc())):
        current = newest.setdefault((report.service, report.host), report.instance)
        replaced_by = None if current == report.instance else current
        if replaced_by is not None and now - report.last_seen >= REPLACED_AFTER:
            continue
        seen.append(Seen(report=report, age=max(dt.timedelta(0), now - report.last_seen), replaced_by=replaced_by))
    return seen
