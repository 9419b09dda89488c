"""Harvest type `xesam_pmh`: install a crawler into each seed's Xesam-PMH target and store what it pushes.

A seed's `token` is the target's bus name, its `uid` the target's object path. Every payload becomes one
WARC resource record (JSON, docs/xesam.md); the call that brought it is answered only once it is
written, which is the spec's back-pressure. The watermark (the newest payload mtime) is staged in the
state store, so it is committed only after the WARC holding those payloads is complete. A full dump
(ListRecords returned False, or CleanUp) starts a new generation: earlier payloads are superseded.
"""

from __future__ import annotations

import queue
import re
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from swath.harvesters.base import Harvester
from swath.harvesters.errors import HarvestError
from swath.messages import codes
from swath.messages.model import HarvestStart, Seed, now_iso
from swath.platforms.xesam.bus import BusError, Endpoint
from swath.platforms.xesam.crawler import Crawler, Event
from swath.platforms.xesam.declaration import PLATFORM
from swath.platforms.xesam.payload import DEFAULT_TARGET_PATH, RECORD_CONTENT_TYPE, ms_to_iso


class XesamError(HarvestError):
    def __init__(self, code: str, message: str, *, seed_id: str | None = None) -> None:
        super().__init__(message, seed_id=seed_id)
        self.code = code


@dataclass
class SeedRun:
    """One seed's crawler and where its harvest stands."""

    seed: Seed
    crawler: Crawler
    watermark: int
    generation: int
    cleaned: bool = False
    done: bool = False
    stored: int = 0  # payloads (deletions included) stored by this run

    @property
    def target(self) -> dict[str, str]:
        return {"bus_name": self.crawler.target_name, "path": self.crawler.target_path}

    @property
    def key(self) -> str:
        return f"xesam:{self.crawler.target_name}{self.crawler.target_path}"


class XesamHarvester(Harvester, declaration=PLATFORM):
    continues_from_state = True  # a resumed crawl asks each target only for what is newer than its watermark

    @classmethod
    def is_stream(cls, start: HarvestStart) -> bool:
        return bool(start.options.get("live"))

    @classmethod
    def honours_stop(cls, start: HarvestStart) -> bool:
        return True  # live or not: a fed crawl can end at any batch, keeping what it received

    def crawl(self) -> None:
        harvest = self.harvest
        self._options(harvest.start.options)
        self.start_ms = int(time.time() * 1000)
        if not harvest.config.dbus_session_bus_address:
            raise XesamError(codes.XESAM_NO_BUS, "DBUS_SESSION_BUS_ADDRESS is not set: no session bus to join")
        try:
            endpoint = Endpoint(address=harvest.config.dbus_session_bus_address)
        except (OSError, RuntimeError, ValueError) as exc:
            raise XesamError(codes.XESAM_NO_BUS, f"cannot connect to the session bus: {exc}") from None
        events: queue.Queue[Event] = queue.Queue()
        try:
            runs = [r for r in (self._install(endpoint, events, seed, i) for i, seed in
                                enumerate(harvest.start.seeds)) if r is not None]
            self._runs = {id(r.crawler): r for r in runs}
            self._loop(runs, events)
            for run in runs:
                run.crawler.invalidate("harvest stopped" if harvest.stopping else "harvest complete")
            self._drain(events)
            if harvest.stop_requested:  # a shutdown resumes instead: nothing to report yet
                self._stopped(runs)
        finally:
            endpoint.close()

    def _options(self, opts: Mapping[str, object]) -> None:
        """Check the options once, so a bad one is a clear bad_request rather than a D-Bus type error."""
        for name in ("fields", "content_cats", "source_cats"):
            value = opts.get(name) or []
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise XesamError(codes.BAD_REQUEST, f"options.{name} must be a list of strings")
        batch, idle = opts.get("max_batch_size", 100), opts.get("idle_timeout", 30.0)
        if not isinstance(batch, int) or isinstance(batch, bool) or not 1 <= batch < 2**32:
            raise XesamError(codes.BAD_REQUEST, "options.max_batch_size must be a whole number from 1")
        if not isinstance(idle, (int, float)) or isinstance(idle, bool) or idle <= 0:
            raise XesamError(codes.BAD_REQUEST, "options.idle_timeout must be a positive number of seconds")
        self.live, self.idle_timeout, self.max_batch = bool(opts.get("live")), float(idle), batch

    def _install(self, endpoint: Endpoint, events: queue.Queue[Event], seed: Seed, index: int) -> SeedRun | None:
        harvest, opts = self.harvest, self.harvest.start.options
        tag = re.sub(r"[^A-Za-z0-9_]", "_", harvest.start.id)
        crawler = Crawler(endpoint=endpoint, path=f"/org/swath/xesam/Crawler/{tag}_{index}_{uuid.uuid4().hex[:8]}",
                          target_name=str(seed.token), target_path=seed.uid or DEFAULT_TARGET_PATH, events=events)
        run = SeedRun(seed=seed, crawler=crawler, watermark=0, generation=0)
        run.watermark = int(harvest.state.get(f"{run.key}:mtime", 0))
        run.generation = int(harvest.state.get(f"{run.key}:generation", 0))
        try:
            incremental = crawler.install(
                mtime=run.watermark, fields=list(opts.get("fields") or []),
                content_cats=list(opts.get("content_cats") or []), source_cats=list(opts.get("source_cats") or []),
                max_batch_size=self.max_batch)
        except (BusError, TimeoutError, ValueError) as exc:  # ValueError: not a bus name or object path
            harvest.error(codes.XESAM_TARGET_UNREACHABLE, f"target {seed.token} {crawler.target_path}: {exc}", seed.id)
            return None
        if not incremental:
            self._cleanup(run, f"ListRecords(mtime={run.watermark}) answered False: a full dump follows")
        return run

    def _loop(self, runs: list[SeedRun], events: queue.Queue[Event]) -> None:
        last = time.monotonic()
        while any(not r.done for r in runs) and not self.harvest.stopping:
            try:
                event = events.get(timeout=0.2)
            except queue.Empty:
                if not self.live and time.monotonic() - last > self.idle_timeout:
                    for run in (r for r in runs if not r.done):
                        run.done = True
                        self.harvest.warning(codes.XESAM_INCOMPLETE, f"no word from {run.crawler.target_name} for "
                                             f"{self.idle_timeout:g}s; ending at mtime {run.watermark}", run.seed.id)
                continue
            last = time.monotonic()
            self._handle(self._runs[id(event.crawler)], event)

    def _drain(self, events: queue.Queue[Event]) -> None:
        """Batches that arrived before the crawler left are stored too: nothing received is lost."""
        while True:
            try:
                event = events.get_nowait()
            except queue.Empty:
                return
            if event.kind == "batch":
                self._store(self._runs[id(event.crawler)], event)

    def _handle(self, run: SeedRun, event: Event) -> None:
        harvest, seed_id = self.harvest, run.seed.id
        if event.kind == "cleanup":
            if not run.cleaned:
                self._cleanup(run, "the target called CleanUp: a full dump follows")
        elif event.kind == "rejected":
            harvest.error(codes.XESAM_BAD_PAYLOAD, f"{run.crawler.target_name}: {event.message}", seed_id)
        elif event.kind == "invalidated":
            if not run.done:
                run.done = True
                harvest.warning(codes.XESAM_INVALIDATED, f"{run.crawler.target_name} invalidated the crawler: "
                                f"{event.message or 'no reason given'}", seed_id)
        else:
            self._store(run, event)
            caught_up = not event.payloads or any(p.mtime >= self.start_ms for p in event.payloads)
            if not self.live and caught_up and not run.done:
                run.done = True  # everything older than the start has arrived

    def _store(self, run: SeedRun, event: Event) -> None:
        harvest = self.harvest
        if event.out_of_order:
            first = event.out_of_order[0]
            harvest.error(codes.XESAM_OUT_OF_ORDER, f"{len(event.out_of_order)} payload(s) from "
                          f"{run.crawler.target_name} older than one received before, e.g. {first.uri} at "
                          f"{first.timestamp}", run.seed.id)
        received = now_iso()
        for p in event.payloads:
            body = p.record(target=run.target, generation=run.generation, harvest_id=harvest.start.id,
                            received=received)
            harvest.write_record(uri=p.uri, record_type="resource", payload=orjson.dumps(body),
                                 content_type=RECORD_CONTENT_TYPE)
            harvest.count("deleted" if p.deleted else "payloads")
            run.stored += 1
            run.watermark = max(run.watermark, p.mtime)
        if event.payloads:
            harvest.state.set(f"{run.key}:mtime", run.watermark)  # committed once this WARC is complete
        event.done()

    def _stopped(self, runs: list[SeedRun]) -> None:
        """harvest.stop ended the crawl: say so per seed, with what was stored."""
        for run in runs:
            state = "had already finished" if run.done else "was still sending"
            self.harvest.info(codes.XESAM_STOPPED, f"stopped the crawl of {run.crawler.target_name} "
                              f"({state}): {run.stored} payload(s) stored in this run, up to mtime {run.watermark}; "
                              "the crawler was invalidated on the target", run.seed.id)

    def _cleanup(self, run: SeedRun, reason: str) -> None:
        """A full dump: a new generation, marked in the WARC so exports drop the earlier ones."""
        harvest = self.harvest
        run.cleaned = True
        run.generation += 1
        harvest.state.set(f"{run.key}:generation", run.generation)
        body = {"kind": "cleanup", "target": run.target, "generation": run.generation,
                "harvest_id": harvest.start.id, "received": now_iso(), "reason": reason,
                "mtime": run.watermark, "timestamp": ms_to_iso(run.watermark)}
        harvest.write_record(uri=f"dbus:{run.crawler.target_name}{run.crawler.target_path}", record_type="metadata",
                             payload=orjson.dumps(body), content_type=RECORD_CONTENT_TYPE)
        harvest.info(codes.XESAM_FULL_DUMP, f"{run.crawler.target_name}: {reason}; generation {run.generation}",
                     run.seed.id)
