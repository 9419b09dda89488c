"""A collection's statistics (stats.py), kept while nothing they sum has changed: the collection page, its JSON
and its seeds' pages would otherwise read every run's stats and errors on each load.

Whether anything changed is one query the database answers from the jobs' and WARCs' indexes (`fingerprint`): the
collection's runs (how many, how many ended, their WARC figures, the latest updated_at), its indexed WARCs (how
many, their bytes, the latest recorded_at, their seed rows) and its seeds. The monitor (another process) records
every harvest.status and warc_created through rows these read, so its change is seen on the next load; nothing has
to be told. The fingerprint is read before the sums: a change committed in between makes the next load sum again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson
from sqlalchemy import func, select, true
from sqlalchemy.orm import Session

from swath.store.models import Job, Source, Warc, WarcSeed
from swath.store.stats import CollectionStats, collection_stats

Fingerprint = tuple[Any, ...]


def fingerprint(s: Session, source: Source) -> Fingerprint:
    runs = select(Job.id).where(Job.source_id == source.id).scalar_subquery()
    jobs = select(func.count().label("runs"), func.count(Job.date_ended).label("ended"),
                  func.max(Job.updated_at).label("updated"),
                  func.coalesce(func.sum(Job.warcs_count), 0).label("run_warcs"),
                  func.coalesce(func.sum(Job.warcs_bytes), 0).label("run_bytes")
                  ).where(Job.source_id == source.id).subquery()
    warcs = select(func.count().label("warcs"), func.coalesce(func.sum(Warc.bytes), 0).label("bytes"),
                   func.max(Warc.recorded_at).label("recorded")).where(Warc.harvest_id.in_(runs)).subquery()
    seeds = select(func.count()).select_from(WarcSeed).join(Warc, WarcSeed.warc_id == Warc.id).where(
        Warc.harvest_id.in_(runs)).scalar_subquery().label("seed_rows")
    row = s.execute(select(jobs, warcs, seeds).select_from(jobs.join(warcs, true()))).one()  # one row each
    return (*row, orjson.dumps(source.seeds, option=orjson.OPT_SORT_KEYS))  # labels and ids come from the seeds


class StatsCache:
    """collection_stats by collection, at most `size` collections (the least recently shown go first). What it
    returns is shared between requests: read it, never change it."""

    def __init__(self, *, size: int = 256) -> None:
        self.size = size
        self._kept: OrderedDict[str, tuple[Fingerprint, CollectionStats]] = OrderedDict()
        self._lock = threading.Lock()  # the web's endpoints run in a thread pool

    def get(self, s: Session, source: Source) -> CollectionStats:
        now = fingerprint(s, source)
        with self._lock:
            kept = self._kept.get(source.id)
            if kept is not None and kept[0] == now:
                self._kept.move_to_end(source.id)
                return kept[1]
        stats = collection_stats(s, source)
        with self._lock:
            self._kept[source.id] = (now, stats)
            self._kept.move_to_end(source.id)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return stats
