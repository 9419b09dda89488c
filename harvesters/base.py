"""The harvest engine's platform side: `Harvester` (one subclass per platform) and `Harvest` (the runtime
one harvest gets: recorded HTTP, counts, checkpoints, notes, its WARC series and state commits).

`harvesters/run.py` runs a harvest.start message with them (`run_harvest`, the swath.core.jobs.Job).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import requests
from requests.adapters import HTTPAdapter

from swath.core.config import Config
from swath.core.encodings import ACCEPT_ENCODING
from swath.harvesters.http import Limits, RecordingAdapter
from swath.harvesters.redaction import Redactor, install_log_filter
from swath.harvesters.state import StateStore
from swath.harvesters.streams import StreamRecording
from swath.harvesters.warc import (
    SOFTWARE,
    ClosedWarc,
    RecordFactory,
    WarcSeries,
    find_harvest_warcs,
    name_pattern,
    recover,
)
from swath.messages import codes
from swath.messages.model import (
    RUNNING,
    HarvestStart,
    HarvestStatus,
    Note,
    Origin,
    now_iso,
)


class Harvester:
    """One subclass per platform/protocol: `types` maps a harvest type to the method doing it."""

    platform: ClassVar[str]
    service: ClassVar[str]
    types: ClassVar[dict[str, str]]
    stream_types: ClassVar[frozenset[str]] = frozenset()  # types that may run until harvest.stop
    # True when a resumed run goes on from the platform's own state (not harvest.checkpoint) rather than
    # from the first page, so the counts of the interrupted run carry over instead of starting again
    continues_from_state: ClassVar[bool] = False

    def __init__(self, *, harvest: Harvest) -> None:
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
        key = (day or dt.datetime.now(dt.UTC).date()).isoformat()
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
