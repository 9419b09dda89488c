"""The harvest engine: `Harvester` (one subclass per platform), `Harvest` (the runtime one harvest
gets) and `run_harvest` (the swath.jobs.Job for harvest.start messages).

The platform method runs in its own thread; the job's thread is the control loop that publishes
(running statuses, warc_created at each rotation, the final status), rotates WARCs by size and
time, and turns harvest.stop / shutdown into `Harvest.stopping` and closed streams.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import queue
import threading
import time
import traceback
from pathlib import Path
from typing import Any, Callable, ClassVar

import requests
from requests.adapters import HTTPAdapter

from harvesters import registry
from harvesters.claims import ClaimLost, HarvestClaim
from harvesters.errors import HarvestError, HarvestStopped
from harvesters.http import Limits, RecordingAdapter, Redactor, install_log_filter
from harvesters.outcome import FinalOutcome, is_final
from harvesters.state import StateStore
from harvesters.streams import StreamRecording
from harvesters.warc import (
    SOFTWARE,
    ClosedWarc,
    RecordFactory,
    WarcSeries,
    WarcWriteFailed,
    find_harvest_warcs,
    name_pattern,
    recover,
)
from messages import codes
from messages.model import (
    COMPLETED_FAILURE,
    COMPLETED_SUCCESS,
    RUNNING,
    HarvestStart,
    HarvestStatus,
    Note,
    Origin,
    WarcCreated,
    now_iso,
)
from messages.routing import WARC_CREATED, BadRoutingKey, parse, status_key_for
from swath.config import Config
from swath.encodings import ACCEPT_ENCODING
from swath.jobs import JobContext, JobInterrupted
from swath.paths import PathOutsideDataRoot, resolve_inside
from swath.stops import clear_stop, stop_recorded

TICK = 0.1  # control-loop period: bounds how late a rotation, status or stop is handled


class Harvester:
    """One subclass per platform/protocol: `types` maps a harvest type to the method doing it."""

    platform: ClassVar[str]
    service: ClassVar[str]
    types: ClassVar[dict[str, str]]
    stream_types: ClassVar[frozenset[str]] = frozenset()  # types that may run until harvest.stop
    # True when a resumed run goes on from the platform's own state (not harvest.checkpoint) rather than
    # from the first page, so the counts of the interrupted run carry over instead of starting again
    continues_from_state: ClassVar[bool] = False

    def __init__(self, *, harvest: "Harvest") -> None:
        self.harvest = harvest

    @classmethod
    def is_stream(cls, start: HarvestStart) -> bool:
        """Whether this harvest runs until harvest.stop (honours stop, rotates by time). Override when
        the message decides, e.g. an option; the registry's `stream` only says the type may stream."""
        return start.type in cls.stream_types


class Harvest:
    """The runtime of one harvest, handed to the platform class (see DEVELOPERS-BRIEF.md)."""

    def __init__(self, *, start: HarvestStart, config: Config, directory: Path, stream: bool = False,
                 log: Any = None, fence: Callable[[], None] = lambda: None) -> None:
        self.start = start
        self.config = config
        self.directory = directory
        self.is_stream = stream
        self.log = log
        self.resumed = False  # True when this run continues an interrupted harvest of the same id
        self.stop_requested = False  # harvest.stop (not a shutdown) ended this stream
        self.state = StateStore(directory=directory)
        self.redactor = Redactor(start.credentials.values())
        self.warcs: list[ClosedWarc] = []
        self.stats: dict[str, dict[str, int]] = {}
        self.infos: list[Note] = []
        self.warnings: list[Note] = []
        self.errors: list[Note] = []
        self.token_updates: dict[str, str] = {}
        self.uids: dict[str, str] = {}
        self._checkpoints: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._refuse = threading.Event()  # no new requests; sleeps end early
        self._streams: set[StreamRecording] = set()
        self._outbox: queue.SimpleQueue[ClosedWarc] = queue.SimpleQueue()
        self._rate_limits = [0, 0.0]  # waits, seconds waited
        self._factory = RecordFactory()
        self._redactors: list[Redactor] = []
        self._period_start = time.monotonic()  # when the current WARC period began (time rotation)
        self.fence = fence  # raises ClaimLost if this process no longer holds the harvest's claim
        self._series = WarcSeries(directory=directory, harvest_id=start.id, info=self._warcinfo(),
                                  on_closed=self._closed, before_rename=fence)
        self._limits = Limits(retries=config.http_retries, backoff=config.http_backoff,
                              timeout=config.http_timeout, max_response_bytes=config.max_response_bytes,
                              max_line_bytes=config.stream_max_line_bytes)
        self.http = requests.Session()
        self.http.headers["Accept-Encoding"] = ACCEPT_ENCODING  # only codings the WARC readers undo
        adapter = self.recording_adapter([])
        self.http.mount("http://", adapter)
        self.http.mount("https://", adapter)

    # --- the API platforms use ---
    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def recording_adapter(self, secrets: list[str]) -> HTTPAdapter:
        """An adapter recording into this harvest's WARCs; mount it on a client library's Session."""
        redactor = Redactor([*self.start.credentials.values(), *secrets])
        self._redactors.append(redactor)
        install_log_filter().add(redactor)
        return RecordingAdapter(sink=self, redactor=redactor, limits=self._limits, factory=self._factory)

    def add_secret(self, value: str) -> None:
        """A credential learnt during the harvest (e.g. a session token): redacted from now on in recorded
        requests, logs, notes and errors, like the start message's credentials."""
        self.redactor.add(value)
        for redactor in self._redactors:
            redactor.add(value)

    def count(self, label: str, n: int = 1, day: dt.date | None = None) -> None:
        with self._lock:
            self._count(label, n, day)

    def _count(self, label: str, n: int, day: dt.date | None) -> None:
        key = (day or dt.datetime.now(dt.timezone.utc).date()).isoformat()
        per_day = self.stats.setdefault(key, {})
        per_day[label] = per_day.get(label, 0) + n

    def checkpoint(self, key: str, value: Any, **counts: int) -> None:
        """Where this harvest has got to (e.g. a seed's next page) and the items counted on the way there,
        in one step: a resumed run starts from the last checkpoint whose WARC was complete, with the counts
        saved with it, so no item is counted twice. Kept per harvest; gone once it has finished."""
        json.dumps(value)  # fail now, in the platform's code, on a value that cannot be stored
        with self._lock:
            for label, n in counts.items():
                self._count(label, n, None)
            self._checkpoints[key] = value

    def resume_point(self, key: str, default: Any = None) -> Any:
        """The value of the last checkpoint(key, ...) of this harvest (of an earlier run too), else default."""
        with self._lock:
            return self._checkpoints.get(key, default)

    def info(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._note(self.infos, code, message, seed_id)

    def warning(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._note(self.warnings, code, message, seed_id)

    def error(self, code: str, message: str, seed_id: str | None = None) -> None:
        """An error makes the final status `completed failure`; use warning() for what the harvest survives."""
        self._note(self.errors, code, message, seed_id)

    def token_update(self, seed_id: str, new_token: str) -> None:
        with self._lock:
            self.token_updates[seed_id] = new_token

    def uid_found(self, seed_id: str, uid: str) -> None:
        with self._lock:
            self.uids[seed_id] = uid

    def write_record(self, *, uri: str, record_type: str, payload: bytes, content_type: str,
                     headers: dict[str, str] | None = None) -> None:
        self.write_records([self._factory.plain(uri=uri, record_type=record_type, payload=payload,
                                                content_type=content_type, headers=headers)])

    # --- the Sink the recording adapter uses ---
    def write_records(self, records: list | Callable[[], list]) -> None:
        """Queue records (or a function building them) for the current WARC, in order."""
        self._series.write(records)

    def rate_limited(self, wait: float, url: str) -> None:
        with self._lock:
            self._rate_limits[0] += 1
            self._rate_limits[1] += wait
        self.debug(f"rate limited by {url}; waiting {wait:.1f}s")

    def requests_refused(self) -> bool:
        return self._refuse.is_set()

    def sleep(self, seconds: float) -> bool:
        return not self._refuse.wait(seconds)

    def add_stream(self, stream: StreamRecording) -> None:
        with self._lock:
            self._streams.add(stream)

    def remove_stream(self, stream: StreamRecording) -> None:
        with self._lock:
            self._streams.discard(stream)

    def debug(self, text: str) -> None:
        if self.log is not None and self.log.isEnabledFor(logging.DEBUG):
            self.log.debug("harvest %s: %s", self.start.id, self.redactor.text(text))

    def close(self) -> None:
        """Release the session and stop redacting this harvest's secrets from library logs."""
        self.http.close()
        for redactor in self._redactors:
            install_log_filter().remove(redactor)

    # --- engine internals ---
    def _note(self, notes: list[Note], code: str, message: str, seed_id: str | None) -> None:
        with self._lock:
            notes.append(Note(code, self.redactor.text(message), seed_id))

    def _warcinfo(self) -> dict[str, str]:
        return {
            "software": SOFTWARE,
            "format": "WARC File Format 1.0",
            "hostname": self.config.host,
            "swath-harvest-id": self.start.id,
            "swath-harvest-type": self.start.type,
            "swath-collection-set-id": self.start.collection_set_id,
            "swath-collection-id": self.start.collection_id,
        }

    @property
    def _journal_key(self) -> str:
        return f"harvest:{self.start.id}"

    def _journal(self) -> dict[str, Any]:
        """What a resumed run needs to report the whole harvest: a copy taken when a WARC is queued for
        closing, committed once it is complete, so it counts no more than that WARC and those before hold."""
        with self._lock:
            return {"stats": {day: dict(counts) for day, counts in self.stats.items()},
                    "token_updates": dict(self.token_updates), "uids": dict(self.uids),
                    "rate_limits": list(self._rate_limits), "checkpoints": dict(self._checkpoints)}

    def _resume(self, *, continues_from_state: bool = False) -> list[ClosedWarc]:
        """Find this harvest's earlier WARCs, recover `.open` leftovers; returns the WARCs to report."""
        done, leftovers = find_harvest_warcs(self.directory, self.start.id)
        for path in leftovers:
            final = recover(path)
            if final is None:
                self.warning(codes.WARC_RECOVERED, f"{path.name} held no complete record and was removed")
            else:
                self.warning(codes.WARC_RECOVERED, f"{path.name} was cut after its last complete record and closed")
                done.append(final)
        if not done and not leftovers and self.state.get(self._journal_key) is None:
            return []
        self.resumed = True
        journal = self.state.get(self._journal_key, {})
        self._checkpoints = dict(journal.get("checkpoints", {}))
        # a REST harvest without checkpoints starts again from its first page: so do its counts
        if self._checkpoints or self.is_stream or continues_from_state:
            self.stats = {day: dict(counts) for day, counts in journal.get("stats", {}).items()}
        self.token_updates = dict(journal.get("token_updates", {}))
        self.uids = dict(journal.get("uids", {}))
        self._rate_limits = list(journal.get("rate_limits", [0, 0.0]))
        pattern = name_pattern(self.start.id)
        done.sort(key=lambda p: int(pattern.match(p.name).group(2)))
        if done:
            self._series.serial = int(pattern.match(done[-1].name).group(2)) + 1
        self.warning(codes.HARVEST_RESUMED, f"resumed an interrupted harvest; {len(done)} earlier WARC(s) kept")
        prior = [ClosedWarc.of(p, self.start.id) for p in done]
        self.warcs.extend(prior)
        return prior

    def _begin_stop(self, *, shutdown: bool) -> None:
        """harvest.stop ends a stream (REST harvests ignore it); shutdown ends any harvest."""
        if not (shutdown or self.is_stream) or self._refuse.is_set():
            return
        # a stream stopped by harvest.stop stays stopped even if a shutdown follows: it finishes
        self.stop_requested = not shutdown
        self._stopping.set()
        self._refuse.set()
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.stop()  # the client reads what was recorded, then EOF; reconnecting gets HarvestStopped

    def _rotate_due(self) -> bool:
        """Size: the WARC on disk passed the limit. Time (streams only): the WARC period is over and
        there is something to put in it. Stream bytes that would pass the size limit uncompressed
        are written out first, so the compressed size can be judged."""
        series = self._series
        if series.rotation_pending.is_set():
            return False
        with self._lock:
            streams = list(self._streams)
        buffered = sum(stream.buffered for stream in streams)
        if buffered and series.written + buffered >= self.config.warc_max_bytes:
            for stream in streams:
                stream.flush_segment()
            buffered = sum(stream.buffered for stream in streams)
        if series.written >= self.config.warc_max_bytes:
            return True
        due = time.monotonic() - self._period_start >= self.config.warc_max_seconds
        return self.is_stream and due and bool(series.written or buffered)

    def _rotate(self, *, last: bool = False, final: bool = False) -> None:
        """Close the current WARC (flushing stream segments into it first). The state staged up to
        now is committed once that WARC is complete on disk: its data is queued ahead of the close.
        `last` also ends the writer (waiting for it); `final` means the harvest is over."""
        with self._lock:
            streams = list(self._streams)
        for stream in streams:
            stream.finish() if last else stream.flush_segment()
        token = (self.state.take_pending(), None if final else self._journal())
        self._period_start = time.monotonic()
        if last:
            self._series.finish(token)
        else:
            self._series.rotate(token)

    def _closed(self, closed: ClosedWarc | None, token: tuple[dict[str, Any], dict[str, Any] | None]) -> None:
        """On the writer thread, after a WARC was closed, fsynced and renamed."""
        staged, journal = token
        if closed is not None:
            with self._lock:
                self.warcs.append(closed)
            self._outbox.put(closed)
        self.state.commit({**staged, self._journal_key: journal})

    def _status(self, status: str, origin: Origin, started: str) -> HarvestStatus:
        with self._lock:
            infos = list(self.infos)
            if self._rate_limits[0]:
                waits, seconds = self._rate_limits
                infos.append(Note(codes.RATE_LIMITED, f"rate limited {waits} time(s); waited {seconds:.0f}s in all"))
            return HarvestStatus(
                id=self.start.id, status=status, origin=origin, date_started=started,
                date_ended=None if status == RUNNING else now_iso(),
                infos=infos, warnings=list(self.warnings), errors=list(self.errors),
                stats={day: dict(c) for day, c in sorted(self.stats.items())},
                token_updates=dict(self.token_updates), uids=dict(self.uids),
                warcs_count=len(self.warcs), warcs_bytes=sum(w.bytes for w in self.warcs),
            )

    def items_so_far(self) -> int:
        with self._lock:
            return sum(n for counts in self.stats.values() for n in counts.values())


class _Run:
    """The control loop of one harvest, on the job's thread (the only thread that publishes)."""

    def __init__(self, *, harvest: Harvest, harvester: Harvester, method: str, ctx: JobContext,
                 status_key: str, origin: Origin) -> None:
        self.harvest = harvest
        self.harvester = harvester
        self.method = method
        self.ctx = ctx
        self.status_key = status_key
        self.origin = origin
        self.started = now_iso()
        self.exc: BaseException | None = None

    def publish_status(self, status: str) -> None:
        self.ctx.publish(self.status_key, self.harvest._status(status, self.origin, self.started).to_dict())

    def publish_warc(self, warc: ClosedWarc) -> None:
        start = self.harvest.start
        self.ctx.publish(WARC_CREATED, WarcCreated(
            path=str(warc.path), sha1=warc.sha1, bytes=warc.bytes, warc_id=warc.warc_id,
            date_created=warc.date_created, collection_set_id=start.collection_set_id or "unknown",
            collection_id=start.collection_id or "unknown", harvest_id=start.id, harvest_type=start.type,
        ).to_dict())

    def drain(self) -> None:
        while True:
            try:
                warc = self.harvest._outbox.get_nowait()
            except queue.Empty:
                return
            self.publish_warc(warc)

    def _target(self) -> None:
        try:
            getattr(self.harvester, self.method)()
        except BaseException as exc:  # handed to the control loop, which decides the status
            self.exc = exc

    def progress(self) -> str:
        harvest = self.harvest
        total = sum(w.bytes for w in harvest.warcs)
        return (f"harvest {harvest.start.id}: {harvest.items_so_far()} items, "
                f"{len(harvest.warcs)} WARC(s) closed, {total} bytes")

    def run(self) -> None:
        harvest, ctx = self.harvest, self.ctx
        outcome = FinalOutcome(directory=harvest.directory, harvest_id=harvest.start.id)
        if self._finished_before(outcome):
            return
        if stop_recorded(ctx.config.data_root, harvest.start.id):  # stopped while between workers
            ctx.log.info("harvest %s was stopped while no worker ran it; stopping now", harvest.start.id)
            ctx.stop.set()
        prior = harvest._resume(continues_from_state=self.harvester.continues_from_state)
        self.publish_status(RUNNING)
        for warc in prior:  # reported again: warc ids are stable, consumers treat them idempotently
            self.publish_warc(warc)
        worker = threading.Thread(target=self._target, name=f"harvest-{harvest.start.id}", daemon=True)
        worker.start()
        try:
            self._loop(worker)
        except BaseException:
            # e.g. publishing failed: end the platform thread too, or a redelivery would race with it
            harvest._begin_stop(shutdown=True)
            raise
        interrupted = ctx.shutdown.is_set() and not harvest.stop_requested
        try:
            harvest._rotate(last=True, final=not interrupted)
        except WarcWriteFailed as exc:
            if isinstance(exc.__cause__, ClaimLost):  # another process may run it now: no final status
                raise JobInterrupted(str(exc.__cause__)) from exc
            if not isinstance(self.exc, WarcWriteFailed):  # else the platform thread's error says it
                harvest.error(codes.LOCAL_FAULT, str(exc))
        self.drain()
        ctx.progress(self.progress())
        if interrupted:
            ctx.log.info("harvest %s interrupted by shutdown; it resumes when redelivered", harvest.start.id)
            raise JobInterrupted(f"harvest {harvest.start.id} interrupted by shutdown")
        self._record_outcome()
        final = COMPLETED_FAILURE if harvest.errors else COMPLETED_SUCCESS
        body = harvest._status(final, self.origin, self.started).to_dict()
        try:
            harvest.fence()
        except ClaimLost as exc:
            raise JobInterrupted(str(exc)) from exc
        outcome.write(body, published=False)
        ctx.publish(self.status_key, body)
        outcome.write(body, published=True)
        clear_stop(ctx.config.data_root, harvest.start.id)
        ctx.log.info("%s: %s", self.progress(), final)

    def _finished_before(self, outcome: FinalOutcome) -> bool:
        """A start for a harvest that already finished: report what was not confirmed, harvest nothing."""
        record = outcome.read()
        if record is None:
            return False
        harvest, ctx = self.harvest, self.ctx
        if not is_final(record):
            ctx.log.info("harvest %s ended on a local fault (%s); resuming it", harvest.start.id,
                         "; ".join(e["message"] for e in record["status"]["errors"])[:500])
            return False
        if record["published"]:
            ctx.log.info("harvest %s already finished (%s); redelivered start ignored",
                         harvest.start.id, record["status"]["status"])
            return True
        ctx.log.info("harvest %s finished but its final status was not confirmed; publishing it again",
                     harvest.start.id)
        done, _leftovers = find_harvest_warcs(harvest.directory, harvest.start.id)
        for path in done:
            self.publish_warc(ClosedWarc.of(path, harvest.start.id))
        ctx.publish(self.status_key, record["status"])
        outcome.write(record["status"], published=True)
        return True

    def _loop(self, worker: threading.Thread) -> None:
        """Until the platform thread ends: stop, rotation, warc_created, running statuses, progress."""
        harvest, ctx = self.harvest, self.ctx
        interval = max(ctx.config.status_interval, TICK)
        next_status = time.monotonic() + interval
        next_progress = time.monotonic()
        while worker.is_alive():
            worker.join(TICK)
            if ctx.stop.is_set():
                harvest._begin_stop(shutdown=ctx.shutdown.is_set())
            if harvest._rotate_due():
                harvest._rotate()
            self.drain()
            now = time.monotonic()
            if now >= next_status:
                self.publish_status(RUNNING)
                ctx.log.info("%s", self.progress())
                next_status = now + interval
            if now >= next_progress:
                ctx.progress(self.progress())
                next_progress = now + 1.0

    def _record_outcome(self) -> None:
        exc, harvest = self.exc, self.harvest
        if exc is None or (isinstance(exc, HarvestStopped) and harvest.stopping):
            return
        if isinstance(exc, WarcWriteFailed):  # the disk, not the remote side: see FinalOutcome
            harvest.error(codes.LOCAL_FAULT, str(exc))
            return
        if isinstance(exc, HarvestError):
            harvest.error(exc.code, exc.message, exc.seed_id)
            self.ctx.log.warning("harvest %s failed: %s: %s", harvest.start.id, exc.code,
                                 harvest.redactor.text(exc.message))
            return
        text = harvest.redactor.text("".join(traceback.format_exception(exc)))
        harvest.error(codes.UNKNOWN_ERROR, harvest.redactor.text(f"{type(exc).__name__}: {exc}"))
        self.ctx.log.error("harvest %s failed unexpectedly:\n%s", harvest.start.id, text)


def _refuse(ctx: JobContext, status_key: str, start: HarvestStart, service: str, code: str, message: str) -> None:
    """A harvest that cannot begin: one `completed failure` status, nothing written."""
    status = HarvestStatus.refused(id=start.id, origin=Origin(service=service, host=ctx.config.host,
                                                              instance=ctx.instance), code=code, message=message)
    ctx.log.warning("harvest %s refused: %s: %s", start.id, code, message)
    ctx.publish(status_key, status.to_dict())


def run_harvest(body: dict[str, Any], *, routing_key: str, ctx: JobContext) -> None:
    """The Job for harvest.start.<platform>.<type> messages (InvalidMessage propagates)."""
    start = HarvestStart.from_dict(body)
    try:
        status_key = status_key_for(routing_key)
        key_type = parse(routing_key).type
    except BadRoutingKey:
        status_key, key_type = f"harvest.status.unknown.{start.type}", start.type
    try:
        htype = registry.lookup(start.type)
        cls = htype.load()
    except registry.UnknownHarvestType as exc:
        return _refuse(ctx, status_key, start, ctx.service, exc.code, exc.message)
    if key_type != start.type:
        return _refuse(ctx, status_key, start, cls.service, codes.BAD_REQUEST,
                       f"routing key {routing_key!r} does not match harvest type {start.type!r}")
    try:
        directory = resolve_inside(ctx.config.data_root, start.path)
    except PathOutsideDataRoot as exc:
        return _refuse(ctx, status_key, start, cls.service, codes.PATH_OUTSIDE_DATA_ROOT, str(exc))
    claim = HarvestClaim(data_root=ctx.config.data_root, harvest_id=start.id)
    if not claim.try_acquire():
        # e.g. the broker redelivered it here after a dropped connection while its runner goes on
        ctx.log.info("harvest %s is running in %s; waiting for it to end", start.id, claim.holder())
        if not claim.acquire(give_up=ctx.shutdown):
            raise JobInterrupted(f"harvest {start.id} still running elsewhere at shutdown")
        ctx.log.info("harvest %s: the claim is free now; looking at what its runner left", start.id)
    try:
        _run_claimed(start, cls, directory, status_key, ctx, claim.check)
    finally:
        claim.release()


def _run_claimed(start: HarvestStart, cls: type[Harvester], directory: Path, status_key: str,
                 ctx: JobContext, fence: Callable[[], None]) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    harvest = Harvest(start=start, config=ctx.config, directory=directory, stream=cls.is_stream(start), log=ctx.log,
                      fence=fence)
    origin = Origin(service=cls.service, host=ctx.config.host, instance=ctx.instance)
    try:
        try:
            harvester = cls(harvest=harvest)
        except Exception as exc:  # a platform that cannot even start (e.g. credentials missing)
            code = exc.code if isinstance(exc, HarvestError) else codes.UNKNOWN_ERROR
            return _refuse(ctx, status_key, start, cls.service, code,
                           harvest.redactor.text(f"{type(exc).__name__}: {exc}"))
        _Run(harvest=harvest, harvester=harvester, method=cls.types[start.type], ctx=ctx,
             status_key=status_key, origin=origin).run()
    finally:
        harvest.close()
