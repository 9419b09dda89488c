"""The platform API: `Harvester` (one subclass per platform) and `Harvest` (what one harvest gives it).

This is the one engine file a platform author needs. The engine behind it: harvesters/recorder.py
(WARCs, state, streams, the resume journal), harvesters/ledger.py (counts and notes), harvesters/run.py
(runs a harvest.start message). See DEVELOPERS-BRIEF.md "Harvest engine API" and docs/harvesting.md.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, ClassVar, Protocol

import requests
from requests.adapters import HTTPAdapter

from swath.core.config import Config
from swath.core.jsontypes import JSONable
from swath.core.platforms import Platform
from swath.messages.model import HarvestStart


class Harvester:
    """One subclass per platform/protocol: `types` maps a harvest type to the method doing it. A platform
    passes its declaration (`declaration=PLATFORM`) rather than copying these four facts from it."""

    platform: ClassVar[str]
    service: ClassVar[str]
    types: ClassVar[dict[str, str]]
    stream_types: ClassVar[frozenset[str]] = frozenset()  # types that may run until harvest.stop
    # True when a resumed run goes on from the platform's own state (not harvest.checkpoint) rather than
    # from the first page, so the counts of the interrupted run carry over instead of starting again
    continues_from_state: ClassVar[bool] = False

    def __init_subclass__(cls, *, declaration: Platform | None = None, **kwargs: object) -> None:
        """`class MastodonHarvester(Harvester, declaration=PLATFORM)` takes `platform`, `service`, `types` and
        `stream_types` from the platform's declaration; a class may still set them by hand (its own win)."""
        super().__init_subclass__(**kwargs)
        if declaration is None:
            return
        own = vars(cls)
        if "platform" not in own:
            cls.platform = declaration.name
        if "service" not in own:
            cls.service = declaration.harvester_service
        if "types" not in own:
            cls.types = declaration.harvest_methods
        if "stream_types" not in own:
            cls.stream_types = declaration.stream_types

    def __init__(self, *, harvest: Harvest) -> None:
        self.harvest = harvest

    @classmethod
    def is_stream(cls, start: HarvestStart) -> bool:
        """Whether this harvest runs until harvest.stop (honours stop, rotates by time). Override when
        the message decides, e.g. an option; the registry's `stream` only says the type may stream."""
        return start.type in cls.stream_types

    @classmethod
    def honours_stop(cls, start: HarvestStart) -> bool:
        """Whether harvest.stop ends this harvest early, keeping what it has (final status, complete WARCs).
        Streams do; a REST harvest ignores it (shutdown ends any). Override for a harvest that is fed, not
        paged, and so can end cleanly at any moment (xesam_pmh)."""
        return cls.is_stream(start)


class Redacting(Protocol):
    def text(self, value: str) -> str: ...  # the value with every credential of the harvest replaced


class State(Protocol):
    """The collection's state (harvesters/state.py `StateStore`); values set are committed to disk
    only once the WARC holding the data they describe is complete."""

    def get(self, key: str, default: Any = None) -> Any: ...
    def set(self, key: str, value: JSONable) -> None: ...
    def delete(self, key: str) -> None: ...


class Report(Protocol):
    """Counts and notes (harvesters/ledger.py `Ledger`)."""

    def count(self, label: str, n: int = 1, day: dt.date | None = None) -> None: ...
    def checkpoint(self, key: str, value: JSONable, **counts: int) -> None: ...
    def resume_point(self, key: str, default: Any = None) -> Any: ...
    def info(self, code: str, message: str, seed_id: str | None = None) -> None: ...
    def warning(self, code: str, message: str, seed_id: str | None = None) -> None: ...
    def error(self, code: str, message: str, seed_id: str | None = None) -> None: ...
    def token_update(self, seed_id: str, new_token: str) -> None: ...
    def uid_found(self, seed_id: str, uid: str) -> None: ...


class Recording(Protocol):
    """What Harvest hands on to (harvesters/recorder.py `Recorder`)."""

    start: HarvestStart
    config: Config
    directory: Path
    is_stream: bool
    resumed: bool
    stop_requested: bool
    http: requests.Session

    @property  # read-only, so the concrete Redactor, StateStore and Ledger satisfy these Protocols
    def redactor(self) -> Redacting: ...
    @property
    def state(self) -> State: ...
    @property
    def ledger(self) -> Report: ...
    @property
    def stopping(self) -> bool: ...
    def recording_adapter(self, secrets: list[str]) -> HTTPAdapter: ...
    def unrecorded_session(self) -> requests.Session: ...
    def add_secret(self, value: str) -> None: ...
    def sleep(self, seconds: float) -> bool: ...
    def write_record(self, *, uri: str, record_type: str, payload: bytes, content_type: str,
                     headers: dict[str, str] | None = None) -> None: ...


class Harvest:
    """One harvest, as its platform sees it; everything else is the engine's (see the module docstring)."""

    def __init__(self, *, recorder: Recording) -> None:
        self._recorder = recorder
        self._report = recorder.ledger
        self.start: HarvestStart = recorder.start  # seeds, options, credentials, ids
        self.config: Config = recorder.config
        self.directory: Path = recorder.directory  # the collection's folder, inside the data root
        self.is_stream: bool = recorder.is_stream
        self.redactor: Redacting = recorder.redactor  # redactor.text(s) before logging s
        self.state: State = recorder.state
        # every exchange is recorded to the current WARC, with retries, rate-limit waits and limits
        self.http: requests.Session = recorder.http

    @property
    def resumed(self) -> bool:
        """This run continues an interrupted harvest of the same id."""
        return self._recorder.resumed

    @property
    def stopping(self) -> bool:
        """harvest.stop or a shutdown arrived: new requests raise HarvestStopped; streams still read to EOF."""
        return self._recorder.stopping

    @property
    def stop_requested(self) -> bool:
        """harvest.stop (not a shutdown) ended this harvest: it finishes now, with a final status."""
        return self._recorder.stop_requested

    def recording_adapter(self, secrets: list[str]) -> HTTPAdapter:
        """An adapter recording into this harvest's WARCs; mount it on a client library's Session."""
        return self._recorder.recording_adapter(secrets)

    def unrecorded_session(self) -> requests.Session:
        """A new session under the same transport policy as `http` (credentials only to this harvest's
        origins, redirects checked, cookies pinned, deadline, size limit) whose exchanges are neither
        recorded nor retried: for logins, token exchanges and dry runs. Close it when done."""
        return self._recorder.unrecorded_session()

    def add_secret(self, value: str) -> None:
        """A credential learnt during the harvest (e.g. a session token): redacted from now on in recorded
        requests, logs, notes and errors, like the start message's credentials."""
        self._recorder.add_secret(value)

    def sleep(self, seconds: float) -> bool:
        """Wait; False when a stop or shutdown ended the wait early."""
        return self._recorder.sleep(seconds)

    def write_record(self, *, uri: str, record_type: str, payload: bytes, content_type: str,
                     headers: dict[str, str] | None = None) -> None:
        """A non-HTTP record (resource, metadata) in the current WARC."""
        self._recorder.write_record(uri=uri, record_type=record_type, payload=payload,
                                    content_type=content_type, headers=headers)

    def count(self, label: str, n: int = 1, day: dt.date | None = None) -> None:
        """Stats: `n` more of `label` (plural lower-case, e.g. "tweets") on `day` (default today, UTC)."""
        self._report.count(label, n, day)

    def checkpoint(self, key: str, value: JSONable, **counts: int) -> None:
        """Where this harvest has got to (e.g. a seed's next page) and the items counted on the way there,
        in one step: a resumed run starts from the last checkpoint whose WARC was complete, with the counts
        saved with it, so no item is counted twice. Kept per harvest; gone once it has finished."""
        self._report.checkpoint(key, value, **counts)

    def resume_point(self, key: str, default: Any = None) -> Any:
        """The value of the last checkpoint(key, ...) of this harvest (of an earlier run too), else default."""
        return self._report.resume_point(key, default)

    def info(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._report.info(code, message, seed_id)

    def warning(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._report.warning(code, message, seed_id)

    def error(self, code: str, message: str, seed_id: str | None = None) -> None:
        """An error makes the final status `completed failure`; use warning() for what the harvest survives."""
        self._report.error(code, message, seed_id)

    def token_update(self, seed_id: str, new_token: str) -> None:
        self._report.token_update(seed_id, new_token)

    def uid_found(self, seed_id: str, uid: str) -> None:
        self._report.uid_found(seed_id, uid)
