"""Schedules, and the scheduler on the real broker and store: one run per slot, no overlap, restart-safe."""

from __future__ import annotations

import datetime as dt
import threading

import orjson
import pytest

from swath.core.config import Config
from swath.messages.worker import Worker, wait_for
from swath.monitor import monitor_worker, record
from swath.requester import Requester
from swath.scheduler import (
    BadSchedule,
    Cron,
    Interval,
    Scheduler,
    parse_schedule,
    slot_job_id,
)
from swath.store import Store, repo
from tests.fakes.httpserver import FakeServer, Response
from tests.requesterkit import running, spec_named, swath
from tests.test_store import status_body


def brute_force_next(expr: str, after: dt.datetime) -> dt.datetime:
    """Reference: step minute by minute and test each field literally (cron's day-of-month/weekday OR rule)."""
    minute, hour, dom, month, dow = expr.split()

    def matches(field: str, value: int, lo: int, hi: int) -> bool:
        for part in field.split(","):
            rng, _, step = part.partition("/")
            start, end = (lo, hi) if rng == "*" else (map(int, rng.split("-")) if "-" in rng else
                                                         (int(rng), hi if step else int(rng)))
            if start <= value <= end and (value - start) % int(step or 1) == 0:
                return True
        return False

    t = after.replace(second=0, microsecond=0) + dt.timedelta(minutes=1)
    while True:
        day_ok = matches(dom, t.day, 1, 31)
        wd_ok = matches(dow, t.isoweekday() % 7, 0, 6) or (t.isoweekday() == 7 and matches(dow, 7, 0, 7))
        days = (day_ok or wd_ok) if dom != "*" and dow != "*" else (day_ok and wd_ok)
        if (matches(minute, t.minute, 0, 59) and matches(hour, t.hour, 0, 23) and matches(month, t.month, 1, 12)
                and days):
            return t
        t += dt.timedelta(minutes=1)


@pytest.mark.parametrize("expr", ["*/15 3 * * 1-5", "0 0 1 * *", "30 12 * * 7", "5,10 */6 13 * 5",
                                  "0 9-17/4 * 2,8 *", "59 23 31 * *"])
def test_cron_next_matches_a_brute_force_reference(expr: str) -> None:
    cron = parse_schedule("cron", expr)
    assert isinstance(cron, Cron)
    starts = (dt.datetime(2024, 1, 31, 23, 59, 30), dt.datetime(2024, 2, 28, 3, 14), dt.datetime(2023, 12, 31, 12, 0))
    for start in starts:
        assert cron.next_after(start, start) == brute_force_next(expr, start)


def test_interval_grid_and_bad_schedules() -> None:
    every = parse_schedule("interval", "90s")
    assert every == Interval(seconds=90)
    assert parse_schedule("interval", "2h") == Interval(seconds=7200)
    slot = dt.datetime(2024, 1, 1)
    assert every.next_after(slot, slot + dt.timedelta(seconds=1)) == slot + dt.timedelta(seconds=90)
    assert every.next_after(slot, slot + dt.timedelta(seconds=500)) == slot + dt.timedelta(seconds=540)
    for kind, expr in [("interval", "0m"), ("interval", "5 weeks"), ("cron", "* * *"), ("cron", "60 * * * *"),
                       ("cron", "* * 0 * *"), ("cron", "a * * * *"), ("cron", "*/0 * * * *"), ("hourly", "x")]:
        with pytest.raises(BadSchedule):
            parse_schedule(kind, expr)


class Clock:
    def __init__(self, now: dt.datetime) -> None:
        self.now = now

    def __call__(self) -> dt.datetime:
        return self.now


class CountingClock(Clock):
    """A Clock the test moves; it counts the scheduler's reads, so the test knows a tick saw the new time."""

    def __init__(self, now: dt.datetime) -> None:
        super().__init__(now)
        self.reads = 0

    def __call__(self) -> dt.datetime:
        self.reads += 1
        return self.now

    def advance(self, to: dt.datetime) -> None:
        """Set the time, then wait until a whole tick ran at it (the tick after it has begun)."""
        self.now = to
        seen = self.reads
        assert wait_for(lambda: self.reads >= seen + 2, 120), f"the scheduler did not tick at {to}"


def scheduled_source(config: Config, interval: str, token: str = "http://127.0.0.1:9/p") -> str:
    swath(config, "harvest", "create", "tick", "--type", "generic_pages", "--seed", token)
    swath(config, "harvest", "validate", "tick")
    return swath(config, "harvest", "schedule", "tick", "--every", interval, "--json")["id"]


def test_scheduler_one_run_per_slot_no_overlap_and_outbox_survives_a_crash(config: Config, broker) -> None:
    starts = broker.queue(config.queue_prefix + "starts", ["harvest.start.generic.*"])
    source_id = scheduled_source(config, "10s")
    store = Store(url=config.db_url)
    with store.session() as s:
        anchor = repo.find_source(s, source_id).next_due
    step = dt.timedelta(seconds=10)
    clock = Clock(anchor)
    first = Scheduler(requester=Requester(config=config, store=store), clock=clock)
    assert first.tick() == [f"{source_id}-s{anchor:%Y%m%dT%H%M%S%f}"]
    clock.now = anchor + 2 * step  # two slots pass while the first job is still queued: nothing overlaps
    assert first.tick() == []
    record(store, "harvest.status.generic.generic_pages", status_body(first.launched[0], "completed success", 1))
    assert len(first.tick()) == 1  # the waiting slots run once
    first.requester.close()

    # a scheduler that dies after claiming, before publishing: the launch record waits in the outbox
    record(store, "harvest.status.generic.generic_pages", status_body(first.launched[1], "completed success", 1))
    clock.now = anchor + 3 * step
    with store.session() as s:
        (orphan,) = repo.claim_due(s, now=clock.now, job_id=slot_job_id,
                                   routing_key=lambda src: "harvest.start.generic.generic_pages",
                                   next_after=lambda src, at: src.next_due + step)
    second = Scheduler(requester=Requester(config=config, store=store), clock=clock)
    assert second.tick() == [orphan.id]
    assert second.tick() == [] and second.tick() == []
    second.requester.close()
    published = [body["id"] for _key, body in broker.drain(starts)]
    assert published == first.launched + [orphan.id]
    with store.session() as s:
        jobs = sorted(repo.list_jobs(s), key=lambda j: j.scheduled_for)
        assert [j.scheduled_for for j in jobs] == [anchor, anchor + step, anchor + 3 * step]
        assert all(j.published_at is not None for j in jobs)
    store.close()


def expected_slots(
    anchor: dt.datetime, step: dt.timedelta, up: list[tuple[dt.datetime, dt.datetime]]
) -> list[dt.datetime]:
    """Slots a restart-safe, coalescing scheduler launches while up in the given windows."""
    slots: list[dt.datetime] = []
    next_due = anchor
    for start, end in up:
        if next_due < start:  # missed while down: one run for the first missed slot
            slots.append(next_due)
            next_due += step * (int((start - next_due) / step) + 1)
        while next_due < end:
            slots.append(next_due)
            next_due += step
    return slots


def test_scheduler_restart_runs_the_expected_number_of_times(config: Config, broker) -> None:
    page = orjson.dumps({"items": [{"id": 1}, {"id": 2}], "next": None})
    server = FakeServer({"/p": lambda req: Response(200, page)})
    store = Store(url=config.db_url)
    step = dt.timedelta(seconds=2)
    with server, running(monitor_worker(config=config, store=store)), \
            running(Worker(config=config, spec=spec_named("generic_harvester"))):
        source_id = scheduled_source(config, "2s", token=f"{server.url}/p")
        with store.session() as s:
            anchor = repo.find_source(s, source_id).next_due
        # windows end half a slot away from any slot, so no launch sits on a boundary
        windows = [(anchor, anchor + 2.5 * step), (anchor + 3.5 * step, anchor + 4.5 * step)]
        # the test moves the clock, and only once the last launch has run: no slot depends on the machine's speed
        clock = CountingClock(anchor)

        def all_done() -> bool:
            with store.session() as s:
                return all(j.status.startswith("completed") for j in repo.list_jobs(s))

        for start, end in windows:
            clock.now = start
            scheduler = Scheduler(requester=Requester(config=config, store=store), tick_seconds=0.05, clock=clock)
            thread = threading.Thread(target=scheduler.run, daemon=True)
            thread.start()
            at = start
            while at < end:  # a quarter slot at a time: every slot is seen while the scheduler is up
                clock.advance(at)
                assert wait_for(all_done, 120), f"a run launched by {at} did not complete"
                at += step / 4
            scheduler.stop.set()
            thread.join(120)
            assert not thread.is_alive(), "the scheduler did not stop within 120 s"
            scheduler.requester.close()
    with store.session() as s:
        jobs = sorted(repo.list_jobs(s), key=lambda j: j.scheduled_for)
    expected = expected_slots(anchor, step, windows)
    assert [j.scheduled_for for j in jobs] == expected
    assert len(server.requests) == len(expected)  # every launch harvested exactly once
    assert all(j.status == "completed success" for j in jobs)
    for earlier, later in zip(jobs, jobs[1:]):  # runs of one source never overlap
        ended = dt.datetime.fromisoformat(earlier.date_ended).astimezone(dt.UTC).replace(tzinfo=None)
        assert ended <= later.created_at
    store.close()
