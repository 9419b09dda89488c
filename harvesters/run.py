"""Running one harvest.start message: `run_harvest` (the swath.core.jobs.Job) takes the harvest's claim,
builds its `Recorder`, the `Harvest` the platform sees and the platform's `Harvester`; `_Run` drives them:
start → claim → resume → the platform method → final status (the worker acks when the job returns).

The platform method runs in its own thread; the job's thread is the control loop that publishes
(running statuses, warc_created at each rotation, the final status), asks the recorder to rotate WARCs
by size and time, and passes harvest.stop / shutdown on to it. Only the recorder's public interface is
used here (harvesters/recorder.py).
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path
from typing import Any

from swath.core.errors import SwathError
from swath.core.jobs import JobContext, JobInterrupted
from swath.core.objects import StorageError
from swath.core.paths import PathOutsideDataRoot, harvest_path
from swath.core.stops import clear_stop, stop_recorded
from swath.core.storage import Ballast, StorageFault, check_free_space, storage_fault, storage_writes
from swath.harvesters import registry
from swath.harvesters.base import Harvest, Harvester
from swath.harvesters.claims import Claim, ClaimLost
from swath.harvesters.coordination import Coordination, LocalFiles, shared_filesystem
from swath.harvesters.errors import HarvestError, HarvestStopped
from swath.harvesters.outcome import FinalOutcome, Outcome, harvest_status, is_final
from swath.harvesters.recorder import Recorder
from swath.harvesters.state import CollectionState
from swath.harvesters.values import NESTED
from swath.harvesters.warc import ClosedWarc, WarcWriteFailed
from swath.messages import codes
from swath.messages.model import (
    COMPLETED_FAILURE,
    COMPLETED_SUCCESS,
    RUNNING,
    HarvestStart,
    HarvestStatus,
    Origin,
    WarcCreated,
    now_iso,
)
from swath.messages.routing import WARC_CREATED, BadRoutingKey, parse, status_key_for

TICK = 0.1  # control-loop period: bounds how late a rotation, status or stop is handled


class _Run:
    """The control loop of one harvest, on the job's thread (the only thread that publishes)."""

    def __init__(self, *, recorder: Recorder, harvester: Harvester, method: str, ctx: JobContext,
                 status_key: str, origin: Origin, outcome: Outcome, ballast: Ballast) -> None:
        self.recorder = recorder
        self.ledger = recorder.ledger
        self.start = recorder.start
        self.harvester = harvester
        self.method = method
        self.ctx = ctx
        self.status_key = status_key
        self.origin = origin
        self.started = now_iso()
        self.exc: BaseException | None = None
        self.outcome = outcome  # the final-status record (a file, or the store's when no filesystem is shared)
        # room set aside for the final-status record, given back when the disk fills (core/storage.py); the
        # recorder gives it back too, before it salvages a WARC whose write failed
        self.ballast = ballast

    def status(self, status: str) -> HarvestStatus:
        return harvest_status(harvest_id=self.start.id, status=status, origin=self.origin, started=self.started,
                              ledger=self.ledger.view(), warcs=self.recorder.warcs)

    def publish_status(self, status: str) -> None:
        self.ctx.publish(self.status_key, self.status(status).to_dict())

    def publish_warc(self, warc: ClosedWarc) -> None:
        start = self.start
        self.ctx.publish(WARC_CREATED, WarcCreated(
            path=warc.location, sha1=warc.sha1, bytes=warc.bytes, warc_id=warc.warc_id,
            date_created=warc.date_created, collection_set_id=start.collection_set_id or "unknown",
            collection_id=start.collection_id or "unknown", harvest_id=start.id, harvest_type=start.type,
            seeds=start.seeds, date_first=warc.date_first, date_last=warc.date_last,
        ).to_dict())

    def drain(self) -> None:
        for warc in self.recorder.take_closed():
            self.publish_warc(warc)

    def _target(self) -> None:
        try:
            getattr(self.harvester, self.method)()
        except BaseException as exc:  # handed to the control loop, which decides the status
            self.exc = exc

    def progress(self) -> str:
        recorder = self.recorder
        return (f"harvest {self.start.id}: {self.ledger.items_so_far()} items, {recorder.bytes_written} bytes "
                f"written, {len(recorder.warcs)} WARC(s) closed")

    def run(self) -> None:
        outcome = self.outcome
        if self._finished_before(outcome):
            return
        self.ballast.lay()
        try:
            self._harvest(outcome)
        finally:
            self.ballast.release()

    def _harvest(self, outcome: Outcome) -> None:
        recorder, ctx, harvest_id = self.recorder, self.ctx, self.start.id
        if stop_recorded(ctx.config.data_root, harvest_id):  # stopped while between workers
            ctx.log.info("harvest %s was stopped while no worker ran it; stopping now", harvest_id)
            ctx.stop.set()
        try:
            prior = recorder.resume(continues_from_state=self.harvester.continues_from_state)
        except StorageError as exc:  # a previous run's WARC could not go up: kept, tried again next run
            return self._storage_failed(outcome, exc)
        self.publish_status(RUNNING)
        for warc in prior:  # reported again: warc ids are stable, consumers treat them idempotently
            self.publish_warc(warc)
        if ctx.stop.is_set() and not recorder.stoppable:  # a REST harvest stopped already: it sees it at once
            recorder.begin_stop(shutdown=ctx.shutdown.is_set())
        worker = threading.Thread(target=self._target, name=f"harvest-{harvest_id}", daemon=True)
        worker.start()
        try:
            self._loop(worker)
        except BaseException:
            # e.g. publishing failed: end the platform thread too, or a redelivery would race with it
            recorder.begin_stop(shutdown=True)
            raise
        interrupted = ctx.shutdown.is_set() and not recorder.stop_requested
        try:
            # a harvest ended by the disk keeps its journal, so the run after it resumes where it got to
            recorder.finish(final=not (interrupted or recorder.halted))
        except WarcWriteFailed as exc:
            if isinstance(exc.__cause__, ClaimLost):  # another process may run it now: no final status
                raise JobInterrupted(str(exc.__cause__)) from exc
            self._write_failed(exc)
        self.drain()
        ctx.progress(self.progress())
        if interrupted:
            ctx.log.info("harvest %s interrupted by shutdown; it resumes when redelivered", harvest_id)
            raise JobInterrupted(f"harvest {harvest_id} interrupted by shutdown")
        self._record_outcome()
        final = COMPLETED_FAILURE if self.ledger.failed else COMPLETED_SUCCESS
        body = self.status(final).to_dict()
        try:
            recorder.fence()
        except ClaimLost as exc:
            raise JobInterrupted(str(exc)) from exc
        self._keep(outcome, body, published=False)
        ctx.publish(self.status_key, body)
        self._keep(outcome, body, published=True)
        clear_stop(ctx.config.data_root, harvest_id)
        ctx.log.info("%s: %s", self.progress(), final)

    def _storage_failed(self, outcome: Outcome, exc: StorageError) -> None:
        """The object store failed before the harvest began: a resumable `completed failure`, nothing run."""
        self.ledger.error(exc.code, f"{exc.message}; the harvest's WARCs stay on disk and go up when it runs again")
        self.ctx.log.warning("harvest %s not started: %s: %s", self.start.id, exc.code, exc.message)
        body = self.status(COMPLETED_FAILURE).to_dict()
        self._keep(outcome, body, published=False)
        self.ctx.publish(self.status_key, body)
        self._keep(outcome, body, published=True)

    def _write_failed(self, exc: WarcWriteFailed) -> None:
        """The one error note of a harvest whose writing failed: the disk's code (disk_full, ...) or local_fault."""
        recorder = self.recorder
        self.ballast.release()  # room for the final-status record
        fault = storage_fault(exc, recorder.directory)
        code, message = (fault.code, fault.message) if fault else (codes.LOCAL_FAULT, str(exc))
        if isinstance(exc.__cause__, StorageError):  # the object store, after retries
            code, message = exc.__cause__.code, f"{exc.__cause__.message}; the WARC stays on disk until it is run again"
        # the stats say what the complete WARCs hold (as of their last commit), not what was received
        received = self.ledger.rewind_counts(recorder.committed_journal())
        self.ledger.error(code, f"{message}; stopped writing: {received} items received, "
                                f"{self.ledger.items_so_far()} counted in {len(recorder.warcs)} complete WARC(s) "
                                f"({recorder.bytes_written} bytes) kept; run it again to resume")
        self.ctx.log.warning("harvest %s stopped: %s: %s", self.start.id, code, message)

    def _keep(self, outcome: Outcome, body: dict[str, Any], *, published: bool) -> None:
        """The final-status record; a disk too full for it does not keep the status from being published
        (without the record a redelivery resumes the harvest rather than reporting it again)."""
        try:
            outcome.write(body, published=published)
        except ClaimLost as exc:  # the store's record refused: a newer runner holds the harvest (claim_fenced)
            raise JobInterrupted(str(exc)) from exc
        except (StorageFault, SwathError) as exc:  # SwathError: the store holding the record failed
            self.ctx.log.warning("harvest %s: its final status could not be kept: %s", self.start.id, exc)

    def _check_free_space(self) -> None:
        """The free-space guard while running: below SWATH_MIN_FREE_BYTES the harvest ends cleanly, resumable."""
        try:
            check_free_space(self.recorder.directory, self.ctx.config.min_free_bytes, what=f"harvest {self.start.id}")
        except StorageFault as fault:
            if not self.recorder.halted:
                self.ledger.error(fault.code, f"{fault.message}; stopped cleanly, resumable")
                self.ctx.log.warning("harvest %s stopped: %s: %s", self.start.id, fault.code, fault.message)
                self.recorder.halt()

    def _finished_before(self, outcome: Outcome) -> bool:
        """A start for a harvest that already finished: report what was not confirmed, harvest nothing."""
        record = outcome.read()
        if record is None:
            return False
        ctx, harvest_id = self.ctx, self.start.id
        if not is_final(record):
            errors = record["status"]["errors"]
            ctx.log.info("harvest %s ended on a local fault (%s); resuming it", harvest_id,
                         "; ".join(e["message"] for e in errors)[:500])
            for error in errors:  # the resumed run's final status says what interrupted it
                self.ledger.warning(error["code"], f"the interrupted run: {error['message']}", error.get("seed_id"))
            return False
        if record["published"]:
            ctx.log.info("harvest %s already finished (%s); redelivered start ignored",
                         harvest_id, record["status"]["status"])
            return True
        ctx.log.info("harvest %s finished but its final status was not confirmed; publishing it again",
                     harvest_id)
        try:
            stored = self.recorder.stored_warcs()
        except StorageError as exc:  # they were announced before that status was; the status matters more now
            ctx.log.warning("harvest %s: its WARCs are not reported again: %s: %s", harvest_id, exc.code, exc.message)
            stored = []
        for warc in stored:
            self.publish_warc(warc)
        ctx.publish(self.status_key, record["status"])
        outcome.write(record["status"], published=True)
        return True

    def _loop(self, worker: threading.Thread) -> None:
        """Until the platform thread ends: stop, rotation, warc_created, running statuses, progress."""
        recorder, ctx = self.recorder, self.ctx
        interval = max(ctx.config.status_interval, TICK)
        next_status = time.monotonic() + interval
        next_progress = next_space = time.monotonic()
        while worker.is_alive():
            worker.join(TICK)
            if ctx.stop.is_set():
                recorder.begin_stop(shutdown=ctx.shutdown.is_set())
            recorder.flush_records()  # a platform's gathered records wait at most a tick
            if recorder.rotate_due():
                try:
                    recorder.rotate()
                except WarcWriteFailed:
                    pass  # the writer failed meanwhile and ended the harvest; finish() says why
            self.drain()
            now = time.monotonic()
            if now >= next_status or now >= next_progress:
                recorder.settle_streams()  # the counts a status or progress line shows
            if now >= next_space:
                self._check_free_space()
                next_space = now + 1.0
            if now >= next_status:
                self.publish_status(RUNNING)
                ctx.log.info("%s", self.progress())
                next_status = now + interval
            if now >= next_progress:
                ctx.progress(self.progress())
                next_progress = now + 1.0

    def _record_outcome(self) -> None:
        exc, ledger, redactor = self.exc, self.ledger, self.recorder.redactor
        if exc is None or (isinstance(exc, HarvestStopped) and self.recorder.stopping):
            return
        if self.recorder.write_failed is not None:  # noted from finish(), whatever the platform made of it
            return
        if isinstance(exc, HarvestError):
            ledger.error(exc.code, exc.message, exc.seed_id)
            self.ctx.log.warning("harvest %s failed: %s: %s", self.start.id, exc.code, redactor.text(exc.message))
            return
        if isinstance(exc, RecursionError):  # a client library (twarc, flickrapi) parsed a hostile document
            ledger.error(codes.BAD_RESPONSE, f"a response was {NESTED} (RecursionError); harvest stopped")
            self.ctx.log.warning("harvest %s failed: %s: a response was %s", self.start.id, codes.BAD_RESPONSE,
                                 NESTED)
            return
        text = redactor.text("".join(traceback.format_exception(exc)))
        ledger.error(codes.UNKNOWN_ERROR, redactor.text(f"{type(exc).__name__}: {exc}"))
        self.ctx.log.error("harvest %s failed unexpectedly:\n%s", self.start.id, text)


def _refuse(ctx: JobContext, status_key: str, start: HarvestStart, service: str, code: str, message: str) -> None:
    """A harvest that cannot begin: one `completed failure` status, nothing written."""
    status = HarvestStatus.refused(id=start.id, origin=Origin(service=service, host=ctx.config.host,
                                                              instance=ctx.instance), code=code, message=message)
    ctx.log.warning("harvest %s refused: %s: %s", start.id, code, message)
    ctx.publish(status_key, status.to_dict())


def run_harvest(body: dict[str, Any], *, routing_key: str, ctx: JobContext,
                coordination: Coordination | None = None) -> None:
    """The Job for harvest.start.<platform>.<type> messages (InvalidMessage propagates). `coordination`: where
    the claim and state are kept; None: files under the data root (harvesters/coordination.py)."""
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
        directory = harvest_path(ctx.config, start.path)
    except PathOutsideDataRoot as exc:
        return _refuse(ctx, status_key, start, cls.service, codes.PATH_OUTSIDE_DATA_ROOT, str(exc))
    if coordination is None:
        if not shared_filesystem(ctx.config):  # a flock here would exclude no runner on another host
            return _refuse(ctx, status_key, start, cls.service, codes.CLAIM_STORE_UNAVAILABLE,
                           "SWATH_STORAGE_URL is object storage: this runner cannot take the harvest's claim "
                           "in the store (run it with `swath worker` or `swath harvest run`)")
        coordination = LocalFiles(ctx.config.data_root)
    claim: Claim | None = None
    claimed = False
    try:  # a disk that is full, read-only or failing refuses the harvest with its code, before any file is touched
        check_free_space(directory, ctx.config.min_free_bytes, what=f"harvest {start.id}")
        with storage_writes(ctx.config.data_root):
            claim = coordination.claim(start.id, instance=ctx.instance)
            claimed = claim.try_acquire()
            directory.mkdir(parents=True, exist_ok=True)
    except (StorageFault, SwathError) as exc:  # SwathError: the store holding claims failed (its code says how)
        if claim is not None and claimed:
            claim.release()
        return _refuse(ctx, status_key, start, cls.service, exc.code, exc.message)
    assert claim is not None  # made before anything in the block above could fail but the disk check
    if not claimed:
        # e.g. the broker redelivered it here after a dropped connection while its runner goes on
        ctx.log.info("harvest %s is running in %s; waiting for it to end", start.id, claim.holder())
        if not claim.acquire(give_up=ctx.shutdown):
            raise JobInterrupted(f"harvest {start.id} still running elsewhere at shutdown")
        ctx.log.info("harvest %s: the claim is free now; looking at what its runner left", start.id)
    try:
        try:
            state = coordination.state(directory=directory, claim=claim)
        except SwathError as exc:
            return _refuse(ctx, status_key, start, cls.service, exc.code, exc.message)
        outcome = coordination.outcome(directory=directory, claim=claim)
        _run_claimed(start, cls, directory, status_key, ctx, claim, state, outcome)
    finally:
        claim.release()


def _run_claimed(start: HarvestStart, cls: type[Harvester], directory: Path, status_key: str,
                 ctx: JobContext, claim: Claim, state: CollectionState, outcome: Outcome) -> None:
    ballast = Ballast(FinalOutcome(directory=directory, harvest_id=start.id).path.with_suffix(".ballast"))
    recorder = Recorder(start=start, config=ctx.config, directory=directory, stream=cls.is_stream(start),
                        stoppable=cls.honours_stop(start), log=ctx.log, fence=claim.check, stop=ctx.stop,
                        shutdown=ctx.shutdown, state=state, fence_token=claim.token, before_salvage=ballast.release)
    origin = Origin(service=cls.service, host=ctx.config.host, instance=ctx.instance)
    try:
        try:
            harvester = cls(harvest=Harvest(recorder=recorder))
        except Exception as exc:  # a platform that cannot even start (e.g. credentials missing)
            code = exc.code if isinstance(exc, HarvestError) else codes.UNKNOWN_ERROR
            return _refuse(ctx, status_key, start, cls.service, code,
                           recorder.redactor.text(f"{type(exc).__name__}: {exc}"))
        _Run(recorder=recorder, harvester=harvester, method=cls.types[start.type], ctx=ctx, status_key=status_key,
             origin=origin, outcome=outcome, ballast=ballast).run()
    finally:
        recorder.close()
