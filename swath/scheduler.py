"""`swath scheduler`: launch due, validated sources, one run at a time per source, restart-safe.

Each tick does two steps. Claim: in one transaction, for every due source with no queued/running job,
write the launch record (job id derived from source + slot, so a second scheduler cannot insert it again)
and move `next_due` past now. Publish: send every launch record still in the outbox and mark it published
once the broker confirmed it. A crash between the two leaves the record in the outbox; the next tick (or the
next scheduler) publishes it, so nothing is launched twice or skipped. Slots missed while the scheduler was
down, or while the previous run was still going, are coalesced into one run.
"""

from __future__ import annotations

import datetime as dt
import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.exc import IntegrityError, OperationalError

from swath.core.errors import SwathError
from swath.messages import codes
from swath.purge import purge_expired
from swath.requester import Requester
from swath.store import repo
from swath.store.models import Source, utcnow

log = logging.getLogger(__name__)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day", 1, 31), ("month", 1, 12), ("weekday", 0, 6))


class BadSchedule(SwathError, ValueError):
    code = codes.BAD_SCHEDULE


@dataclass(frozen=True)
class Interval:
    seconds: float
    kind: str = "interval"

    def first_due(self, now: dt.datetime) -> dt.datetime:
        return now  # the first run is due as soon as the source is scheduled

    def next_after(self, slot: dt.datetime, now: dt.datetime) -> dt.datetime:
        """The first slot of the grid slot + k*interval strictly after now (no drift, missed slots coalesce)."""
        step = dt.timedelta(seconds=self.seconds)
        k = max(0, int((now - slot) / step)) + 1
        return slot + k * step


@dataclass(frozen=True)
class Cron:
    """Five-field cron (minute hour day month weekday; *, lists, ranges, /steps; weekday 0 or 7 = Sunday)."""

    fields: tuple[frozenset[int], ...]
    restricted_day: bool = False
    restricted_weekday: bool = False
    kind: str = "cron"

    def first_due(self, now: dt.datetime) -> dt.datetime:
        return self.next_after(now, now)

    def next_after(self, slot: dt.datetime, now: dt.datetime) -> dt.datetime:
        t = max(slot, now).replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
        minutes, hours, days, months, weekdays = self.fields
        for _ in range(366 * 24 * 60 * 5):  # at most five years of minutes: a Feb 30 never matches
            if t.month not in months:
                t = (t.replace(day=1, hour=0, minute=0) + dt.timedelta(days=32)).replace(day=1)
                continue
            if not self._day_ok(t, days, weekdays):
                t = t.replace(hour=0, minute=0) + dt.timedelta(days=1)
                continue
            if t.hour not in hours:
                t = t.replace(minute=0) + dt.timedelta(hours=1)
                continue
            if t.minute not in minutes:
                t += dt.timedelta(minutes=1)
                continue
            return t
        raise BadSchedule("the cron expression never matches a date")

    def _day_ok(self, t: dt.datetime, days: frozenset[int], weekdays: frozenset[int]) -> bool:
        dom, dow = t.day in days, (t.isoweekday() % 7) in weekdays
        if self.restricted_day and self.restricted_weekday:
            return dom or dow  # cron's rule: either restricted field may match
        return dom and dow


Schedule = Interval | Cron


def parse_schedule(kind: str, expr: str) -> Schedule:
    if kind == "interval":
        match = _INTERVAL.match(expr)
        if not match or float(match.group(1)) <= 0:
            raise BadSchedule(f"interval {expr!r} is not a positive number with s, m, h or d (e.g. 30s, 15m, 1d)")
        return Interval(seconds=float(match.group(1)) * _UNITS[match.group(2)])
    if kind == "cron":
        parts = expr.split()
        if len(parts) != 5:
            raise BadSchedule(f"cron expression {expr!r} needs five fields: minute hour day month weekday")
        sets = tuple(_cron_field(p, name, lo, 7 if name == "weekday" else hi)
                     for p, (name, lo, hi) in zip(parts, _FIELDS))
        weekdays = frozenset(d % 7 for d in sets[4])
        return Cron(fields=(*sets[:4], weekdays), restricted_day=parts[2] != "*", restricted_weekday=parts[4] != "*")
    raise BadSchedule(f"schedule kind {kind!r} is not cron or interval")


def _cron_field(text: str, name: str, lo: int, hi: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        rng, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if rng == "*":
                start, end = lo, hi
            elif "-" in rng:
                a, b = rng.split("-", 1)
                start, end = int(a), int(b)
            else:
                start = int(rng)
                end = hi if step_text else start
        except ValueError:
            raise BadSchedule(f"cron {name} field {text!r} is not numbers, ranges, lists or steps") from None
        if step < 1 or not lo <= start <= end <= hi:
            raise BadSchedule(f"cron {name} field {text!r} is outside {lo}-{hi}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def schedule_of(source: Source) -> Schedule:
    assert source.schedule_kind and source.schedule_expr
    return parse_schedule(source.schedule_kind, source.schedule_expr)


def slot_job_id(source: Source, slot: dt.datetime) -> str:
    return f"{source.id}-s{slot:%Y%m%dT%H%M%S%f}"


@dataclass(kw_only=True)
class Scheduler:
    requester: Requester
    tick_seconds: float = 1.0
    clock: Callable[[], dt.datetime] = utcnow  # naive UTC, as the store keeps it; tests may swap it
    stop: threading.Event = field(default_factory=threading.Event)
    launched: list[str] = field(default_factory=list)
    purge_every: float = 3600.0  # seconds between retention expiries (swath/purge.py)
    purged: list[str] = field(default_factory=list)  # the sources its expiries removed
    _next_purge: dt.datetime | None = None

    def expire(self, now: dt.datetime) -> None:
        """Purge the deleted collections whose retention ended (at most every `purge_every` seconds)."""
        if self._next_purge is not None and now < self._next_purge:
            return
        self._next_purge = now + dt.timedelta(seconds=self.purge_every)
        with self.requester.store.session() as s:
            done = purge_expired(s, self.requester.config, now)
        if done.names:
            self.purged.extend(done.names)
            log.info("retention expiry: %s", done.text())

    def tick(self) -> list[str]:
        """Claim due sources, then publish the outbox. Returns the harvest ids published."""
        now = self.clock()
        try:
            with self.requester.store.session() as s:
                claimed = repo.claim_due(
                    s, now=now, job_id=slot_job_id, routing_key=self.requester.start_routing_key,
                    next_after=lambda src, at: schedule_of(src).next_after(src.next_due or at, at))
                for job in claimed:
                    log.info("source %s due at %s: launch record %s", job.source_id, job.scheduled_for, job.id)
        except (IntegrityError, OperationalError) as exc:  # another scheduler claimed it, or SQLite was busy
            log.info("claim skipped this tick: %s", type(exc).__name__)
        published = [r.job_id for r in self.requester.publish_pending() if r.published]
        self.launched.extend(published)
        self.expire(now)
        return published

    def run(self) -> None:
        log.info("scheduler running (tick %.1fs)", self.tick_seconds)
        while not self.stop.is_set():
            try:
                self.tick()
            except Exception:  # a bad tick (broker or database away) must not end the service
                log.exception("scheduler tick failed; retrying")
            self.stop.wait(self.tick_seconds)
