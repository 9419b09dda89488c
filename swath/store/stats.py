"""A collection's statistics over its whole life, as SFM UI shows them: items by kind and per day (summed from its
runs' harvest.status stats, whose keys are the days the harvester counted the items on), WARCs and their bytes
(the WARC index), and per seed its WARCs, items, last success and last failure.

harvest.status counts items per run, not per seed: a seed's items are the counts of the runs whose indexed WARCs
hold that seed alone; the items of runs of several seeds stay with the collection (`shared_runs` says how many).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from swath.store.models import FAILURE, SUCCESS, Job, Source, Warc, WarcSeed, as_utc, parse_utc


@dataclass
class Outcome:
    """A run's end as it concerns a seed: when, which run, and for a failure the first error naming it."""

    run: str
    at: str | None
    message: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"run": self.run, "at": self.at, "message": self.message}


@dataclass
class SeedStats:
    id: str
    label: str
    items: dict[str, int] = field(default_factory=dict)
    days: dict[str, dict[str, int]] = field(default_factory=dict)  # of the runs of this seed alone
    warcs: int = 0
    warc_bytes: int = 0
    last_success: Outcome | None = None
    last_failure: Outcome | None = None

    def as_dict(self) -> dict[str, object]:
        return {"id": self.id, "label": self.label, "items": self.items, "total_items": sum(self.items.values()),
                "per_day": day_list(self.days),
                "warcs": {"count": self.warcs, "bytes": self.warc_bytes},
                "last_success": self.last_success and self.last_success.as_dict(),
                "last_failure": self.last_failure and self.last_failure.as_dict()}


@dataclass
class CollectionStats:
    runs: dict[str, int]  # by status
    items: dict[str, int]  # kind -> count, over every run
    per_day: list[tuple[str, dict[str, int]]]  # (day, kind -> count), oldest first
    warcs: int
    warc_bytes: int
    seeds: list[SeedStats]
    shared_runs: int  # runs with items whose WARCs hold several seeds (or none known)

    def as_dict(self) -> dict[str, object]:
        return {"runs": self.runs, "items": self.items, "total_items": sum(self.items.values()),
                "per_day": day_list(dict(self.per_day)),
                "warcs": {"count": self.warcs, "bytes": self.warc_bytes}, "shared_runs": self.shared_runs,
                "seeds": [seed.as_dict() for seed in self.seeds]}

    def seed(self, seed_id: str) -> SeedStats | None:
        return next((seed for seed in self.seeds if seed.id == seed_id), None)


def day_list(days: dict[str, dict[str, int]]) -> list[dict[str, object]]:
    return [{"day": day, "items": days[day]} for day in sorted(days)]


def seed_label(seed: Mapping[str, object]) -> str:
    return str(seed.get("token") or seed.get("uid") or seed.get("id"))


class _Run(Protocol):
    """A row of collection_stats' query: the columns of a Job the sums need."""

    id: str
    status: str
    stats: Mapping[str, object]
    errors: Sequence[object]
    date_ended: str | None
    updated_at: dt.datetime


def collection_stats(s: Session, source: Source) -> CollectionStats:
    # the columns the sums need (a run's infos and warnings can be long)
    jobs = list(s.execute(select(Job.id, Job.status, Job.stats, Job.errors, Job.date_ended, Job.updated_at)
                          .where(Job.source_id == source.id)))
    job_ids = select(Job.id).where(Job.source_id == source.id).scalar_subquery()
    warcs, warc_bytes = s.execute(select(func.count(), func.coalesce(func.sum(Warc.bytes), 0))
                                  .where(Warc.harvest_id.in_(job_ids))).one()
    seeds_of: dict[str, set[str]] = {}  # run -> the seeds its indexed WARCs hold
    for run, seed_id in s.execute(select(Warc.harvest_id, WarcSeed.seed_id).join(WarcSeed, WarcSeed.warc_id == Warc.id)
                                  .where(Warc.harvest_id.in_(job_ids)).distinct()):
        seeds_of.setdefault(run, set()).add(seed_id)
    per_seed = {str(seed["id"]): SeedStats(str(seed["id"]), seed_label(seed))
                for seed in source.seeds if isinstance(seed, dict) and seed.get("id")}
    for seed_id, count, total in s.execute(
            select(WarcSeed.seed_id, func.count(), func.coalesce(func.sum(Warc.bytes), 0))
            .join(Warc, WarcSeed.warc_id == Warc.id).where(Warc.harvest_id.in_(job_ids)).group_by(WarcSeed.seed_id)):
        if seed_id in per_seed:
            per_seed[seed_id].warcs, per_seed[seed_id].warc_bytes = int(count), int(total)
    runs: dict[str, int] = {}
    items: dict[str, int] = {}
    days: dict[str, dict[str, int]] = {}
    shared = 0
    for job in sorted(jobs, key=_ended):
        runs[job.status] = runs.get(job.status, 0) + 1
        run_items = _add_days(days, job.stats or {})
        _add(items, run_items)
        held = seeds_of.get(job.id, set())
        if run_items and len(held) == 1 and (only := per_seed.get(next(iter(held)))) is not None:
            _add(only.items, _add_days(only.days, job.stats or {}))
        elif run_items:
            shared += 1
        _outcomes(job, per_seed, held)
    return CollectionStats(runs=runs, items=items, per_day=sorted((d, c) for d, c in days.items()), warcs=int(warcs),
                           warc_bytes=int(warc_bytes), seeds=list(per_seed.values()), shared_runs=shared)


def _add(into: dict[str, int], counts: dict[str, int]) -> None:
    for kind, n in counts.items():
        into[kind] = into.get(kind, 0) + n


def _add_days(days: dict[str, dict[str, int]], stats: Mapping[str, object]) -> dict[str, int]:
    """Add a run's per-day stats to `days`; the run's totals by kind."""
    total: dict[str, int] = {}
    for day, counts in stats.items():
        if isinstance(counts, dict):
            clean = {str(kind): int(n) for kind, n in counts.items() if isinstance(n, int) and n > 0}
            _add(days.setdefault(str(day), {}), clean)
            _add(total, clean)
    return total


def _ended(job: _Run) -> dt.datetime:
    return parse_utc(job.date_ended) or parse_utc(job.updated_at) or dt.datetime.min.replace(tzinfo=dt.UTC)


def _outcomes(job: _Run, per_seed: dict[str, SeedStats], held: Iterable[str]) -> None:
    """A finished run's outcome for each seed it concerns (runs come oldest first: the last one stays). An error
    naming a seed is that seed's failure; a failed run with an error naming no seed (or none) failed for all its
    seeds; otherwise the run succeeded for the seeds no error names."""
    if job.status not in (SUCCESS, FAILURE):  # running, queued or cancelled: no outcome
        return
    at = job.date_ended or as_utc(job.updated_at)
    named = {str(e.get("seed_id")): str(e.get("message", "")) for e in reversed(job.errors or [])
             if isinstance(e, dict) and e.get("seed_id")}
    general = next((str(e.get("message", "")) for e in job.errors or [] if isinstance(e, dict)
                    and not e.get("seed_id")), None)
    concerned = set(held) or set(per_seed)  # seeds unknown (no indexed WARC): the collection's seeds
    for seed_id in concerned | set(named):
        seed = per_seed.get(seed_id)
        if seed is None:
            continue
        if seed_id in named:
            seed.last_failure = Outcome(job.id, at, named[seed_id])
        elif job.status == FAILURE and (general is not None or not named):
            seed.last_failure = Outcome(job.id, at, general)
        else:
            seed.last_success = Outcome(job.id, at)
