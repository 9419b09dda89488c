"""Tables of issue 36's replicas and verification: per WARC and store, when it was copied and last checked, and
each `swath storage verify` run's counts (the Operations page shows both; swath/replicas.py fills them).

Kept apart from models.py so the WARC index's own table changes without touching these.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from swath.store.models import Base, utcnow

PRIMARY, REPLICA = "primary", "replica"  # the stores a WARC's copies are in
# a copy's result: as expected, or what is wrong with it
OK, MISSING, SIZE, SHA1, NO_SHA1 = "ok", "missing", "size", "sha1", "no_sha1"


class WarcCopy(Base):
    """One WARC's copy in one store: when it was replicated (the replica) and what its last check found."""

    __tablename__ = "warc_copies"
    __table_args__ = (Index("ix_warc_copies_target_replicated", "target", "replicated_at"),)

    warc_id: Mapped[str] = mapped_column(ForeignKey("warcs.id", ondelete="CASCADE"), primary_key=True)
    target: Mapped[str] = mapped_column(String(20), primary_key=True)  # PRIMARY or REPLICA
    replicated_at: Mapped[dt.datetime | None] = mapped_column(DateTime)  # the replica's copy made and checked
    verified_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    result: Mapped[str | None] = mapped_column(String(20))  # OK, MISSING, SIZE, SHA1, NO_SHA1
    detail: Mapped[str | None] = mapped_column(String(500))


class StorageCheck(Base):
    """One `swath storage verify` run: when, of what, and what it found."""

    __tablename__ = "storage_checks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, index=True)
    finished_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    collection_id: Mapped[str | None] = mapped_column(String(100))  # None: every collection
    deep: Mapped[bool] = mapped_column(Boolean, default=False)  # bytes re-read and hashed
    warcs: Mapped[int] = mapped_column(Integer, default=0)  # WARCs checked
    copies: Mapped[int] = mapped_column(Integer, default=0)  # copies checked (WARCs x stores)
    ok: Mapped[int] = mapped_column(Integer, default=0)
    missing: Mapped[int] = mapped_column(Integer, default=0)
    differs: Mapped[int] = mapped_column(Integer, default=0)  # size, SHA-1, or no SHA-1 to check against
