"""The WARC index in the store: what the monitor learns from a warc_created besides monitor_repo.record_warc (the path
from the data root, the records' dates, the harvest's seeds) and the queries an export selects its WARCs by
(swath/export_index.py).

A WARC's seeds come from swath's optional `seeds` field of warc_created, else from the seeds of the source
whose job (harvest id) the requester launched; SFM's WARCs have neither, so their seeds stay unknown and
every seed export reads them (`seeds_known` false), as it reads WARCs recorded before this index existed.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import or_, select, union
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from swath.messages.model import Seed, WarcCreated
from swath.store.models import Job, Source, Warc, WarcSeed, naive_utc, parse_utc

MAX_PATH, MAX_SEED = 1000, 200  # the columns' lengths (PostgreSQL refuses longer values)


@dataclass(frozen=True)
class IndexedWarc:
    path: str  # as warc_created said it
    rel_path: str | None  # from the data root, when it was inside the monitor's data root
    collection_id: str


def record_details(s: Session, row: Warc, warc: WarcCreated, *, data_root: Path | None) -> None:
    """Complete the index entry of a WARC monitor_repo.record_warc recorded (idempotent: redeliveries add nothing)."""
    rel_path = relative_path(warc.path, data_root)
    row.rel_path = rel_path if rel_path is not None and len(rel_path) <= MAX_PATH else None
    # a date the schema's pattern let through but the calendar has not: no range, so never left out
    first, last = parse_utc(warc.date_first), parse_utc(warc.date_last)
    row.date_first, row.date_last = (first, last) if first and last and first <= last else (None, None)
    seeds = warc.seeds if warc.seeds is not None else harvest_seeds(s, warc.harvest_id)
    if seeds is None or any(len(seed.id) > MAX_SEED or len(seed.uid or "") > MAX_SEED for seed in seeds):
        return  # not told, or not storable: its seeds stay unknown, so every seed export reads it
    row.seeds_known = True
    have = set(s.scalars(select(WarcSeed.seed_id).where(WarcSeed.warc_id == row.id)))
    fresh = {seed.id: seed.uid for seed in seeds if seed.id not in have}
    if not fresh:
        return
    try:
        with s.begin_nested():  # another monitor replica may record the same redelivered message
            s.add_all(WarcSeed(warc_id=row.id, seed_id=seed_id, uid=uid) for seed_id, uid in fresh.items())
    except IntegrityError:
        pass  # its rows are these rows


def harvest_seeds(s: Session, harvest_id: str) -> list[Seed] | None:
    """The seeds of the source whose job this harvest is; None when the store did not launch it."""
    job = s.get(Job, harvest_id)
    source = s.get(Source, job.source_id) if job is not None and job.source_id else None
    if source is None:
        return None
    return [Seed(str(d["id"]), None, str(d["uid"]) if d.get("uid") else None)
            for d in source.seeds if isinstance(d, dict) and d.get("id")]


def relative_path(path: str, data_root: Path | None) -> str | None:
    """`path` from the data root, if it lies inside it (None: outside, or no data root known)."""
    if data_root is None or not os.path.isabs(path):
        return None
    normal = Path(os.path.normpath(path))
    for root in {Path(os.path.normpath(os.path.abspath(data_root))), Path(os.path.realpath(data_root))}:
        if normal.is_relative_to(root) and normal != root:
            return str(normal.relative_to(root))
    return None


def select_indexed(s: Session, *, collection_id: str | None, seeds: Collection[tuple[str, str | None]],
                   date_start: dt.datetime | None, date_end: dt.datetime | None) -> list[IndexedWarc]:
    """The WARCs of a collection, or of seeds (by seed id; by uid only for a seed id the index does not know, as
    `swath export start --seed-uid` sends; WARCs whose seeds are unknown too), whose records may fall between the
    harvest dates (WARCs without dates too)."""
    query = select(Warc.path, Warc.rel_path, Warc.collection_id)
    if collection_id is not None:
        query = query.where(Warc.collection_id == collection_id)
    seed_ids = {seed_id for seed_id, _ in seeds}
    # a known seed id reads only its own harvests' WARCs: its uid may be harvested by another group's collection too
    known = set(s.scalars(select(WarcSeed.seed_id).where(WarcSeed.seed_id.in_(list(seed_ids))).distinct()))
    uids = {uid for seed_id, uid in seeds if uid and seed_id not in known}
    if seed_ids or uids:
        # a union of two indexed lookups: an OR of the two would read every row of the table
        of_seeds = select(WarcSeed.warc_id).where(or_(WarcSeed.seed_id.in_(list(seed_ids)),
                                                      WarcSeed.uid.in_(list(uids))))
        query = query.where(Warc.id.in_(union(of_seeds, select(Warc.id).where(Warc.seeds_known.is_(False)))))
    if date_start is not None:
        query = query.where(or_(Warc.date_last.is_(None), Warc.date_last >= naive_utc(date_start)))
    if date_end is not None:
        query = query.where(or_(Warc.date_first.is_(None), Warc.date_first <= naive_utc(date_end)))
    return [IndexedWarc(path, rel_path, collection) for path, rel_path, collection in s.execute(query)]


def indexed_in(s: Session, collection_ids: Collection[str]) -> list[IndexedWarc]:
    """Every indexed WARC of these collections (to tell the unindexed files in their folders)."""
    query = select(Warc.path, Warc.rel_path, Warc.collection_id).where(Warc.collection_id.in_(list(collection_ids)))
    return [IndexedWarc(path, rel_path, collection) for path, rel_path, collection in s.execute(query)]
