"""Tables of issue 32's notifications and operations: who wants which e-mail, and the services that reported.

Kept apart from web_models.py so the web's own tables change without touching these (and the other way).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from swath.store.models import Base, utcnow

# the event kinds a member may choose (swath/notify.py sends them)
HARVEST_FAILED, STREAM_STOPPED, EXPORT_READY = "harvest_failed", "stream_stopped", "export_ready"
EVENT_KINDS = (HARVEST_FAILED, STREAM_STOPPED, EXPORT_READY)


class NotifySetting(Base):
    """A web user's e-mail address and the events they chose to be told of (all off until they choose)."""

    __tablename__ = "web_notify_settings"

    user_id: Mapped[str] = mapped_column(ForeignKey("web_users.id", ondelete="CASCADE"), primary_key=True)
    email: Mapped[str] = mapped_column(String(254), default="")
    harvest_failed: Mapped[bool] = mapped_column(Boolean, default=False)
    stream_stopped: Mapped[bool] = mapped_column(Boolean, default=False)
    export_ready: Mapped[bool] = mapped_column(Boolean, default=False)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class ServiceReport(Base):
    """The last status one worker or exporter process (service, host, instance) published: its heartbeat."""

    __tablename__ = "service_reports"

    service: Mapped[str] = mapped_column(String(200), primary_key=True)
    host: Mapped[str] = mapped_column(String(200), primary_key=True)
    instance: Mapped[str] = mapped_column(String(100), primary_key=True)
    role: Mapped[str] = mapped_column(String(20))  # "harvester" | "exporter"
    first_seen: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_seen: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    last_id: Mapped[str] = mapped_column(String(200))  # the harvest or export it last reported on
    last_status: Mapped[str] = mapped_column(String(30))
