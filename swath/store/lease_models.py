"""Tables of the claim without a shared filesystem (issue 36): each harvest's fencing counter and holder, its
final-status record, and the collections' state, for sites whose WARCs go to object storage
(swath/store/pg_claim.py, harvest_state.py).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, DateTime, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from swath.store.models import Base, utcnow


class HarvestClaimRow(Base):
    """One row per harvest id ever claimed: `token` grows by one at each acquisition (the fencing token);
    host/pid/instance name the runner that took it last (what `holder()` says)."""

    __tablename__ = "harvest_claims"

    harvest_id: Mapped[str] = mapped_column(String(400), primary_key=True)
    token: Mapped[int] = mapped_column(BigInteger)
    host: Mapped[str] = mapped_column(String(200))
    pid: Mapped[int] = mapped_column(Integer)
    instance: Mapped[str] = mapped_column(String(100))
    acquired_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class HarvestStateRow(Base):
    """One key of a collection's state (what swath-state.json holds on a local data root): `scope` is the
    collection's folder relative to the harvest root, `value` its JSON."""

    __tablename__ = "harvest_state"

    scope: Mapped[str] = mapped_column(String(1000), primary_key=True)
    key: Mapped[str] = mapped_column(String(1000), primary_key=True)
    value: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)


class HarvestOutcomeRow(Base):
    """A harvest's final-status record (what .swath/harvests/<id>.json holds on a local data root): the status
    and whether the broker confirmed it, as JSON."""

    __tablename__ = "harvest_outcomes"

    harvest_id: Mapped[str] = mapped_column(String(400), primary_key=True)
    record: Mapped[str] = mapped_column(Text)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow, onupdate=utcnow)
