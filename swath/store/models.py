"""The requester's tables: sources, stored credentials, jobs (launch records), WARCs, exports, rejects.

Times are stored as naive UTC (SQLite keeps no offset; PostgreSQL `timestamp without time zone`);
`utcnow()` is the one clock the store writes with.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

PENDING, ACCEPTED, REFUSED = "pending", "accepted", "refused"  # validation states (udata's)
QUEUED, RUNNING = "queued", "running"  # job states before the harvester's final status
SUCCESS, FAILURE = "completed success", "completed failure"
CANCELLED = "cancelled"  # by `swath harvest cancel` (or a stop of a queued job); final, the source is free
ACTIVE_STATES = (QUEUED, RUNNING)


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def naive_utc(value: dt.datetime) -> dt.datetime:
    """A time as the store keeps it: naive UTC (an aware time converted, a naive one taken as UTC already)."""
    return value.astimezone(dt.UTC).replace(tzinfo=None) if value.tzinfo else value


def parse_utc(value: dt.datetime | str | None) -> dt.datetime | None:
    """An ISO time (or a datetime) as naive UTC; None for none or a string that is not a time."""
    if not value:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return naive_utc(value)


def as_utc(value: dt.datetime | None) -> str | None:
    """A stored naive-UTC time as ISO with offset, for output."""
    return value.replace(tzinfo=dt.UTC).isoformat() if value else None


class Base(DeclarativeBase):
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}


class Source(Base):
    """A harvest source: type + seeds + options + credential references + collection ids."""

    __tablename__ = "sources"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), index=True)  # unique per group (repo.name_taken)
    harvest_type: Mapped[str] = mapped_column(String(100))
    platform: Mapped[str] = mapped_column(String(100))
    seeds: Mapped[list[Any]] = mapped_column(default=list)
    options: Mapped[dict[str, Any]] = mapped_column(default=dict)
    # credential name -> reference ("env:VAR" or "stored"); the values never live in this table
    credentials: Mapped[dict[str, Any]] = mapped_column(default=dict)
    collection_set_id: Mapped[str] = mapped_column(String(100))
    collection_id: Mapped[str] = mapped_column(String(100))
    validation: Mapped[str] = mapped_column(String(20), default=PENDING)
    validation_comment: Mapped[str | None] = mapped_column(Text)
    validated_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    schedule_kind: Mapped[str | None] = mapped_column(String(20))  # "cron" | "interval"
    schedule_expr: Mapped[str | None] = mapped_column(String(100))
    next_due: Mapped[dt.datetime | None] = mapped_column(DateTime, index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    deleted_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    # deleted (not only deactivated): swath/purge.py removes it, its WARCs and exports after this time
    purge_after: Mapped[dt.datetime | None] = mapped_column(DateTime)


class Secret(Base):
    """A credential value kept in the store (alternative to an environment variable), sealed (store/secrets.py)."""

    __tablename__ = "secrets"

    source_id: Mapped[str] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    value: Mapped[str] = mapped_column(Text)  # a Fernet token; the value itself only in legacy "plain" rows
    # "fernet" or "plain" (rows from before encryption; `swath secrets migrate` seals them)
    scheme: Mapped[str] = mapped_column(String(20), default="fernet", server_default="plain")


class Job(Base):
    """One harvest: written when launched (the outbox row), then updated from harvest.status messages."""

    __tablename__ = "jobs"
    __table_args__ = (UniqueConstraint("source_id", "scheduled_for", name="uq_jobs_source_slot"),
                      Index("ix_jobs_created_at", "created_at"))  # the newest runs, without sorting them all

    id: Mapped[str] = mapped_column(String(200), primary_key=True)  # the harvest id
    source_id: Mapped[str | None] = mapped_column(ForeignKey("sources.id", ondelete="SET NULL"), index=True)
    harvest_type: Mapped[str] = mapped_column(String(100))
    routing_key: Mapped[str] = mapped_column(String(300))
    trigger: Mapped[str] = mapped_column(String(20), default="manual")  # manual|schedule|external|sync|sfm_import
    scheduled_for: Mapped[dt.datetime | None] = mapped_column(DateTime)  # the schedule slot it fills
    status: Mapped[str] = mapped_column(String(30), default=QUEUED, index=True)  # also CANCELLED
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    published_at: Mapped[dt.datetime | None] = mapped_column(DateTime)  # NULL: still in the outbox
    stop_requested_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    date_started: Mapped[str | None] = mapped_column(String(40))
    date_ended: Mapped[str | None] = mapped_column(String(40))
    stats: Mapped[dict[str, Any]] = mapped_column(default=dict)
    infos: Mapped[list[Any]] = mapped_column(default=list)
    warnings: Mapped[list[Any]] = mapped_column(default=list)
    errors: Mapped[list[Any]] = mapped_column(default=list)
    token_updates: Mapped[dict[str, Any]] = mapped_column(default=dict)
    uids: Mapped[dict[str, Any]] = mapped_column(default=dict)
    warcs_count: Mapped[int] = mapped_column(Integer, default=0)
    warcs_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    service: Mapped[str | None] = mapped_column(String(200))
    host: Mapped[str | None] = mapped_column(String(200))
    instance: Mapped[str | None] = mapped_column(String(100))
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Warc(Base):
    """A WARC announced by warc_created: the WARC index exporters can read."""

    __tablename__ = "warcs"
    __table_args__ = (Index("ix_warcs_collection", "collection_id"), Index("ix_warcs_seeds_known", "seeds_known"))

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    path: Mapped[str] = mapped_column(String(1000))
    sha1: Mapped[str] = mapped_column(String(40))
    bytes: Mapped[int] = mapped_column(BigInteger)
    date_created: Mapped[str] = mapped_column(String(40))
    collection_set_id: Mapped[str] = mapped_column(String(100))
    collection_id: Mapped[str] = mapped_column(String(100))
    harvest_id: Mapped[str] = mapped_column(String(200), index=True)
    harvest_type: Mapped[str] = mapped_column(String(100))
    recorded_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    # the export index (store/warc_index.py): the path from the data root, so the root may move
    rel_path: Mapped[str | None] = mapped_column(String(1000))
    date_first: Mapped[dt.datetime | None] = mapped_column(DateTime)  # its records' WARC-Dates, when told
    date_last: Mapped[dt.datetime | None] = mapped_column(DateTime)
    seeds_known: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())  # else: any seed


class WarcSeed(Base):
    """A seed whose items a WARC may hold (its harvest's seeds), for seed exports."""

    __tablename__ = "warc_seeds"

    warc_id: Mapped[str] = mapped_column(ForeignKey("warcs.id", ondelete="CASCADE"), primary_key=True)
    seed_id: Mapped[str] = mapped_column(String(200), primary_key=True, index=True)
    uid: Mapped[str | None] = mapped_column(String(200), index=True)


class Export(Base):
    """An export: written by `swath export start`, updated from export.status messages."""

    __tablename__ = "exports"

    id: Mapped[str] = mapped_column(String(200), primary_key=True)
    export_type: Mapped[str | None] = mapped_column(String(100))
    format: Mapped[str | None] = mapped_column(String(30))
    path: Mapped[str | None] = mapped_column(String(1000))
    collection_id: Mapped[str | None] = mapped_column(String(100))
    status: Mapped[str] = mapped_column(String(30), default=QUEUED)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    date_started: Mapped[str | None] = mapped_column(String(40))
    date_ended: Mapped[str | None] = mapped_column(String(40))
    infos: Mapped[list[Any]] = mapped_column(default=list)
    warnings: Mapped[list[Any]] = mapped_column(default=list)
    errors: Mapped[list[Any]] = mapped_column(default=list)
    extra: Mapped[dict[str, Any]] = mapped_column(default=dict)
    service: Mapped[str | None] = mapped_column(String(200))
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Rejected(Base):
    """A status message the monitor dead-lettered, once per distinct body (redelivery-safe count)."""

    __tablename__ = "rejected_messages"

    digest: Mapped[str] = mapped_column(String(40), primary_key=True)  # sha1 of routing key + body
    routing_key: Mapped[str] = mapped_column(String(300))
    code: Mapped[str] = mapped_column(String(60))
    message: Mapped[str] = mapped_column(Text)
    seen_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Attachment(Base):
    """An existing harvested item attached to a source's remote id (udata's `harvest attach`)."""

    __tablename__ = "attachments"

    source_id: Mapped[str] = mapped_column(ForeignKey("sources.id", ondelete="CASCADE"), primary_key=True)
    remote_id: Mapped[str] = mapped_column(String(500), primary_key=True)
    item_id: Mapped[str] = mapped_column(String(500))
    attached_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
