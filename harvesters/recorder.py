"""The recorder of one harvest: everything whose truth is the WARCs on disk.

It owns the WARC series (a writer thread, rotation by size and, for streams, by time), the streams
being recorded, the recorded HTTP session and the adapters for client libraries' sessions (it is the
`Sink` they write into), the collection's state and the resume journal, both committed only once the
WARC holding their data is complete, and the outbox of closed WARCs that the run reports. It also turns
a stop or shutdown into refused requests, ended sleeps and closed streams.

Used by harvesters/run.py (the methods under "the run's interface") and, for the platform, through
harvesters/base.py `Harvest`. See docs/harvesting.md.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import requests
from requests.adapters import HTTPAdapter

from swath.core.config import Config
from swath.core.encodings import ACCEPT_ENCODING
from swath.core.jsontypes import JSONObject
from swath.harvesters.guard import OriginGuard, credential_origins, guard_session
from swath.harvesters.http import GuardedAdapter, Limits, RecordingAdapter
from swath.harvesters.ledger import Ledger
from swath.harvesters.outbox import Outbox
from swath.harvesters.pending import PendingRecords
from swath.harvesters.redaction import harvest_redactor, install_log_filter
from swath.harvesters.state import CollectionState, StateStore
from swath.harvesters.streams import StreamRecording
from swath.harvesters.uploads import UploadQueue, WarcUploader
from swath.harvesters.warc import (
    ClosedWarc,
    WarcSeries,
    WarcWriteFailed,
    find_harvest_warcs,
    harvest_warcinfo,
    name_pattern,
    recover,
)
from swath.harvesters.warc_records import RecordFactory
from swath.messages import codes
from swath.messages.model import HarvestStart

# the journal's key in the collection's state: committed with each WARC, removed when the harvest ends
JOURNAL_PREFIX = "harvest:"


class Recorder:
    """The WARCs, state, streams and journal of one harvest (see the module docstring)."""

    def __init__(self, *, start: HarvestStart, config: Config, directory: Path, stream: bool = False,
                 stoppable: bool | None = None, log: logging.Logger | None = None,
                 fence: Callable[[], None] = lambda: None, stop: threading.Event | None = None,
                 shutdown: threading.Event | None = None, state: CollectionState | None = None,
                 fence_token: int | None = None, before_salvage: Callable[[], None] = lambda: None) -> None:
        """`before_salvage`: called on the writer thread when writing failed, before the WARC is cut and closed
        (the run gives back the space it set aside: harvesters/run.py)."""
        self.start = start
        self.config = config
        self.directory = directory
        self.is_stream = stream
        self.stoppable = stream if stoppable is None else stoppable  # harvest.stop ends it (Harvester.honours_stop)
        self.log = log
        self.fence = fence  # raises ClaimLost if this process no longer holds the harvest's claim
        # the claim's fencing token (None with flock): an upload to object storage writes it beside the object
        self.fence_token = fence_token
        # the job's stop and shutdown, looked at before each request: a stop ends a REST harvest at its next page
        self._signals = (stop or threading.Event(), shutdown or threading.Event())
        self._stop_lock = threading.Lock()
        # one redactor for the whole harvest: the ledger, every adapter, the WARC records and the log filter
        # share it, so a secret learnt during the harvest (add_secret, a Set-Cookie) is redacted everywhere
        self.redactor = harvest_redactor(start, max_decoded=config.max_response_bytes)
        install_log_filter().add(self.redactor)
        self.ledger = Ledger(redactor=self.redactor)
        # the collection's state file, or the store's rows when workers share no filesystem (coordination.py)
        self.state: CollectionState = StateStore(directory=directory) if state is None else state
        self._outbox = Outbox()  # the closed WARCs, to report
        # SWATH_STORAGE_URL set: each closed WARC is uploaded before its state commits (harvesters/uploads.py)
        self.uploader = WarcUploader.for_harvest(
            config, directory, start.id, fence=fence, fence_token=fence_token,
            on_replica_lag=lambda message: self.ledger.warning(codes.REPLICA_LAG, message))
        self._uploads = None if self.uploader is None else UploadQueue(
            uploader=self.uploader, apply=self.state.commit, on_stored=self._outbox.add, on_failed=self._write_failed)
        self.resumed = False  # True when this run continues an interrupted harvest of the same id
        self.stop_requested = False  # harvest.stop (not a shutdown) ended this harvest
        self.halted = False  # a storage fault or the free-space guard ended it: its journal is kept for a resume
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._refuse = threading.Event()  # no new requests; sleeps end early
        self._streams: set[StreamRecording] = set()
        self._factory = RecordFactory(redactor=self.redactor)
        self._period_start = time.monotonic()  # when the current WARC period began (time rotation)
        self._series = WarcSeries(directory=directory, harvest_id=start.id,
                                  info=harvest_warcinfo(start, host=config.host), on_closed=self._closed,
                                  before_rename=fence, before_salvage=before_salvage, on_failed=self._write_failed)
        # a platform's own records (an item's dataset), queued to the writer together (harvesters/pending.py)
        self._pending = PendingRecords(series=self._series, factory=self._factory,
                                       warc_max_bytes=config.warc_max_bytes)
        self._limits = Limits(retries=config.http_retries, backoff=config.http_backoff,
                              timeout=config.http_timeout, max_response_bytes=config.max_response_bytes,
                              max_line_bytes=config.stream_max_line_bytes, deadline=config.http_deadline)
        # credentials only to the harvest's own origins; the guard sees every secret any redactor knows
        self.guard = OriginGuard(origins=credential_origins(start, config), secret_in=self._holds_secret)
        self.http = guard_session(requests.Session())
        self.http.headers["Accept-Encoding"] = ACCEPT_ENCODING  # only codings the WARC readers undo
        adapter = self.recording_adapter([])
        self.http.mount("http://", adapter)
        self.http.mount("https://", adapter)

    # --- what the platform reaches through Harvest ---
    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def recording_adapter(self, secrets: list[str]) -> HTTPAdapter:
        """An adapter recording into this harvest's WARCs; mount it on a client library's Session."""
        self.redactor.add(*secrets)  # the library's extra secrets are the harvest's: redacted everywhere
        return RecordingAdapter(sink=self, redactor=self.redactor, limits=self._limits, factory=self._factory,
                                guard=self.guard)

    def unrecorded_session(self) -> requests.Session:
        """A new session under the same transport policy as `http` (origins, redirects, cookies, deadline,
        size limit, stop) whose exchanges are not recorded and not retried: logins, token exchanges, dry
        runs. The caller closes it."""
        session = guard_session(requests.Session())
        adapter = GuardedAdapter(gate=self, guard=self.guard, limits=self._limits)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        return session

    def add_secret(self, value: str) -> None:
        self.redactor.add(value)

    def write_record(self, *, uri: str, record_type: str, payload: bytes, content_type: str,
                     headers: dict[str, str] | None = None) -> None:
        self._pending.add(uri=uri, record_type=record_type, payload=payload, content_type=content_type,
                          headers=headers)

    def flush_records(self) -> None:
        """Queue the records gathered so far (the control loop's tick); never waits."""
        self._pending.flush()

    # --- the Sink the recording adapter and stream taps write into (harvesters/http.py, streams.py) ---
    def write_records(self, records: list[Any] | Callable[[], list[Any]], *, size: int = 0) -> None:
        """Queue records (or a function building them; `size`: their payload bytes) for the current WARC, in order."""
        self._pending.write(records, size=size)

    def rate_limited(self, wait: float, url: str) -> None:
        self.ledger.rate_limited(wait)
        self.debug(f"rate limited by {url}; waiting {wait:.1f}s")

    def requests_refused(self) -> bool:
        stop, shutdown = self._signals
        if stop.is_set() and not self.stoppable:  # streams are stopped by the control loop (stream.stop())
            self.begin_stop(shutdown=shutdown.is_set())
        return self._refuse.is_set()

    def sleep(self, seconds: float) -> bool:
        """Wait; False if a stop or shutdown ended the wait early."""
        return not self._refuse.wait(seconds)

    def add_stream(self, stream: StreamRecording) -> None:
        with self._lock:
            self._streams.add(stream)

    def remove_stream(self, stream: StreamRecording) -> None:
        with self._lock:
            self._streams.discard(stream)

    def debug(self, text: str | Callable[[], str]) -> None:
        """A debug line; `text` may be a function making it, called only when debug lines are logged."""
        if self.log is not None and self.log.isEnabledFor(logging.DEBUG):
            self.log.debug("harvest %s: %s", self.start.id, self.redactor.text(text() if callable(text) else text))

    # --- the run's interface (harvesters/run.py) ---
    @property
    def warcs(self) -> list[ClosedWarc]:
        """Every closed WARC of this harvest, an interrupted run's included."""
        return self._outbox.all

    def take_closed(self) -> list[ClosedWarc]:
        """The WARCs closed since the last call, in order: each is reported once in warc_created."""
        return self._outbox.take()

    def resume(self, *, continues_from_state: bool = False) -> list[ClosedWarc]:
        """Find this harvest's earlier WARCs, recover `.open` leftovers and take up the journal; returns
        the WARCs of an interrupted run (to report again), [] for a harvest starting afresh."""
        done, leftovers = find_harvest_warcs(self.directory, self.start.id)
        for path in leftovers:
            final = recover(path)
            if final is None:
                self.ledger.warning(codes.WARC_RECOVERED, f"{path.name} held no complete record and was removed")
            else:
                self.ledger.warning(codes.WARC_RECOVERED,
                                    f"{path.name} was cut after its last complete record and closed")
                done.append(final)
        stored: list[ClosedWarc] | None = None
        if self.uploader is not None:  # a previous run's closed WARCs not yet in the store go up first
            stored, done = self._resume_uploads(sorted(done, key=self._serial)), []
        if not done and not leftovers and not stored and self.state.get(self._journal_key) is None:
            return []
        self.resumed = True
        journal = self.state.get(self._journal_key, {})
        # a REST harvest without checkpoints starts again from its first page: so do its counts
        counts = bool(journal.get("checkpoints")) or self.is_stream or continues_from_state
        self.ledger.restore(journal, counts=counts)
        done.sort(key=self._serial)
        prior = stored if stored is not None else [ClosedWarc.of(p, self.start.id) for p in done]
        if prior:
            self._series.serial = self._serial(prior[-1].path) + 1
        self.ledger.warning(codes.HARVEST_RESUMED,
                            f"resumed an interrupted harvest; {len(prior)} earlier WARC(s) kept")
        self._outbox.keep(prior)
        return prior

    def _resume_uploads(self, done: list[Path]) -> list[ClosedWarc]:
        """Object storage: what earlier runs left, settled against the last WARC whose state was committed
        (`WarcUploader.settle`); the leftovers past it go up first."""
        assert self.uploader is not None
        return self.uploader.settle(done, committed=self.state.get(self._stored_key, -1), serial=self._serial,
                                    apply=self.state.commit,
                                    warn=lambda message: self.ledger.warning(codes.WARC_RECOVERED, message))

    def stored_warcs(self) -> list[ClosedWarc]:
        """This harvest's complete WARCs where they are kept: the store's objects, else the folder's files."""
        if self.uploader is not None:
            return self.uploader.stored()
        done, _ = find_harvest_warcs(self.directory, self.start.id)
        return [ClosedWarc.of(p, self.start.id) for p in done]

    def _serial(self, path: Path) -> int:
        match = name_pattern(self.start.id).match(path.name)
        assert match is not None  # find_harvest_warcs and the uploader return only names of this pattern
        return int(match.group(2))

    def begin_stop(self, *, shutdown: bool) -> None:
        """harvest.stop ends any harvest: a stream or another stoppable one at once, a REST harvest at its next
        request (`HarvestStopped`); a shutdown ends any, resumable."""
        with self._stop_lock:  # from the control loop and the platform's thread (requests_refused)
            if self._refuse.is_set():
                return
            # a stream stopped by harvest.stop stays stopped even if a shutdown follows: it finishes
            self.stop_requested = not shutdown
            if self.stop_requested and not self.stoppable:
                self.ledger.warning(codes.HARVEST_STOPPED, "harvest.stop ended the harvest at its next request; "
                                                           "what was harvested before it is kept")
            self._end()

    def halt(self) -> None:
        """End the harvest because of the disk (a failed write, the free-space guard), keeping it resumable."""
        self.halted = True
        self._end()

    @property
    def write_failed(self) -> BaseException | None:
        """The error that stopped the WARC writer (a StorageFault when the disk refused) or the uploads (a
        StorageError), else None."""
        return self._series.failed or (self._uploads.failed if self._uploads is not None else None)

    def committed_journal(self) -> JSONObject | None:
        """The journal as last committed with a complete WARC (None: none yet)."""
        journal: JSONObject | None = self.state.get(self._journal_key)
        return journal

    @property
    def bytes_written(self) -> int:
        """Bytes on disk in this harvest's WARCs, the one being written included: what progress reports."""
        uploading = self._uploads.pending_bytes if self._uploads is not None else 0
        return sum(w.bytes for w in self.warcs) + uploading + self._series.written

    def rotate_due(self) -> bool:
        """Size: the WARC on disk passed the limit. Time (streams only): the WARC period is over and
        there is something to put in it. Stream bytes that would pass the size limit uncompressed
        are written out first, so the compressed size can be judged."""
        series = self._series
        if series.rotation_pending.is_set() or series.failed is not None:
            return False
        streams = self._current_streams()
        buffered = sum(stream.buffered for stream in streams)
        if buffered and series.written + buffered >= self.config.warc_max_bytes:
            for stream in streams:
                stream.flush_segment()
            buffered = sum(stream.buffered for stream in streams)
        if series.written >= self.config.warc_max_bytes:
            return True
        due = time.monotonic() - self._period_start >= self.config.warc_max_seconds
        return self.is_stream and due and bool(series.written or buffered)

    def settle_streams(self) -> None:
        """Let the streams that count their own events checkpoint what they hold (once a second, not per event)."""
        for stream in self._current_streams():
            stream.settle()

    def rotate(self) -> None:
        """Close the current WARC (stream segments flushed into it first); the state staged so far and
        the journal are committed once it is complete on disk, as its data is queued ahead of the close."""
        for stream in self._current_streams():
            stream.flush_segment()
        self._close(lambda: (self.state.take_pending(), self.ledger.journal()), last=False)

    def finish(self, *, final: bool) -> None:
        """Close the last WARC (ending the streams) and wait for the writer; raises WarcWriteFailed if
        writing failed. `final`: the harvest is over, so its journal is removed; otherwise (a shutdown)
        the journal is kept for the run that resumes it."""
        for stream in self._current_streams():
            try:
                stream.finish()
            except WarcWriteFailed:
                pass  # the series raises it below, after its writer ended
        # with object storage the journal goes up with the last WARC and is removed once that is stored: a
        # failed last upload leaves a journal that says the harvest got to its end, so the rerun fetches nothing
        keep_journal = not final or self.uploader is not None
        try:
            self._close(lambda: (self.state.take_pending(), self.ledger.journal() if keep_journal else None),
                        last=True)
        finally:
            if self._uploads is not None:
                self._uploads.drain()  # every closed WARC stored (or kept after a failure) before the end
        if self._uploads is not None and self._uploads.failed is not None:
            raise WarcWriteFailed(f"storing WARCs failed: {self._uploads.failed}") from self._uploads.failed
        if final and self.uploader is not None:
            self.state.commit({self._journal_key: None, self._stored_key: None})

    def close(self) -> None:
        """Release the session and stop redacting this harvest's secrets from library logs; uploads under way end
        first (the claim is released after this: no other runner may find a WARC half-handled)."""
        if self._uploads is not None:
            self._uploads.drain()
        self.http.close()
        install_log_filter().remove(self.redactor)

    # --- internals ---
    def _holds_secret(self, text: str) -> bool:
        return self.redactor.text(text) != text

    @property
    def _journal_key(self) -> str:
        return f"{JOURNAL_PREFIX}{self.start.id}"

    @property
    def _stored_key(self) -> str:
        """Object storage: the serial of this harvest's last WARC uploaded with its state committed."""
        return f"{JOURNAL_PREFIX}{self.start.id}:stored"

    def _end(self) -> None:
        self._stopping.set()
        self._refuse.set()
        for stream in self._current_streams():
            stream.stop()  # the client reads what was recorded, then EOF; reconnecting gets HarvestStopped

    def _write_failed(self, error: BaseException) -> None:
        """On the writer thread: nothing more can be recorded, so the harvest ends now (and says why)."""
        self.halt()

    def _current_streams(self) -> list[StreamRecording]:
        with self._lock:
            return list(self._streams)

    def _close(self, token: Callable[[], tuple[JSONObject, JSONObject | None]], *, last: bool) -> None:
        """Close the WARC with the state and journal `token` reads. The gathered records are queued, and the
        token read, under the lock a record is gathered under: every item the journal counts is in this WARC."""
        self._period_start = time.monotonic()
        with self._pending.queued():
            taken = token()
            if not last:
                self._series.rotate(taken)
                return
        self._series.finish(taken)  # waits for the writer: not under the lock

    def _closed(self, closed: ClosedWarc | None,
                token: tuple[JSONObject, JSONObject | None] | None) -> None:
        """On the writer thread, after a WARC was closed, fsynced and renamed (token None: salvaged after a
        failed write; its data's state and journal are not committed, so the resumed run fetches it again).
        With object storage the WARC is uploaded first and its state committed once the upload is checked; a
        failed upload ends the harvest (the writer fails) with the WARC and its commit kept for the next run."""
        if closed is not None and token is None:
            self.ledger.warning(codes.WARC_RECOVERED, f"{closed.path.name} was cut after its last complete record "
                                                      "when writing failed, and closed")
        if closed is not None and self._uploads is not None:
            # the commit names the WARC's serial, so a later run tells an object whose state was committed from
            # one a dead run uploaded but never committed (`_resume_uploads`); a salvaged WARC commits only that
            mark: JSONObject = {self._stored_key: self._serial(closed.path)}
            self._uploads.put(closed, mark if token is None else {**token[0], self._journal_key: token[1], **mark})
            return
        if closed is not None:
            self._outbox.add(closed)
        if token is not None:
            staged, journal = token
            self.state.commit({**staged, self._journal_key: journal})
