"""Queries of storage_models.py: the indexed WARCs to check or copy (in pages, by id), each copy's state, the
verification runs, and the replication lag the Operations page shows (swath/replicas.py writes them)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import and_, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from swath.store.models import Warc, utcnow
from swath.store.storage_models import REPLICA, StorageCheck, WarcCopy

PAGE = 500  # WARCs read per query: a big archive is walked in pages, never loaded whole


@dataclass(frozen=True)
class IndexedCopy:
    """What a check needs of one indexed WARC: where it is and what it should be."""

    id: str
    path: str
    rel_path: str | None
    collection_id: str
    size: int
    sha1: str
    recorded_at: dt.datetime


@dataclass(frozen=True)
class Lag:
    """WARCs indexed but not (yet) copied to the replica, and how long the oldest has waited."""

    unreplicated: int
    oldest: dt.datetime | None  # recorded_at of the oldest of them


def warcs_after(s: Session, after: str, *, collection_id: str | None, limit: int = PAGE) -> list[IndexedCopy]:
    """The next page of indexed WARCs (by id, after `after`), of one collection or all."""
    query = select(Warc.id, Warc.path, Warc.rel_path, Warc.collection_id, Warc.bytes, Warc.sha1, Warc.recorded_at)
    query = query.where(Warc.id > after).order_by(Warc.id).limit(limit)
    if collection_id is not None:
        query = query.where(Warc.collection_id == collection_id)
    return [IndexedCopy(*row) for row in s.execute(query)]


def record_copy(s: Session, *, warc_id: str, target: str, result: str, detail: str = "", verified: bool = True,
                replicated: bool = False) -> None:
    """A copy's state after a check (`verified`) or a copy made and checked (`replicated`)."""
    now = utcnow()
    row = s.get(WarcCopy, (warc_id, target))
    if row is None:
        row = WarcCopy(warc_id=warc_id, target=target)
        try:
            with s.begin_nested():  # a replicate and a verify running together may both add it
                s.add(row)
        except IntegrityError:
            row = s.get(WarcCopy, (warc_id, target))
            assert row is not None
    if verified:
        row.verified_at, row.result, row.detail = now, result, detail[:500] or None
    if replicated:
        row.replicated_at = now
    elif target == REPLICA and result != "ok":
        row.replicated_at = None  # gone or damaged: it counts as not replicated until copied again


def start_check(s: Session, *, collection_id: str | None, deep: bool) -> int:
    row = StorageCheck(collection_id=collection_id, deep=deep)
    s.add(row)
    s.flush()
    return row.id


def finish_check(s: Session, check_id: int, *, warcs: int, copies: int, ok: int, missing: int, differs: int) -> None:
    row = s.get(StorageCheck, check_id)
    if row is not None:
        row.finished_at = utcnow()
        row.warcs, row.copies, row.ok, row.missing, row.differs = warcs, copies, ok, missing, differs


def last_check(s: Session) -> StorageCheck | None:
    """The newest finished verification run."""
    query = select(StorageCheck).where(StorageCheck.finished_at.is_not(None))
    return s.scalars(query.order_by(StorageCheck.started_at.desc(), StorageCheck.id.desc()).limit(1)).first()


def replication_lag(s: Session) -> Lag:
    """Indexed WARCs without a replica copy made and checked, and the oldest one's recorded_at."""
    copied = and_(WarcCopy.warc_id == Warc.id, WarcCopy.target == REPLICA, WarcCopy.replicated_at.is_not(None))
    query = select(func.count(Warc.id), func.min(Warc.recorded_at)).outerjoin(WarcCopy, copied)
    count, oldest = s.execute(query.where(WarcCopy.warc_id.is_(None))).one()
    return Lag(int(count or 0), oldest)
