"""Pluggable metadata backends (udata's BaseBackend): list the remote items, process one item.

A backend knows one protocol. This module runs it for one seed the way udata's process_dataset does:
every item ends `done`, `skipped` or `failed` (with its own error), one bad item never stops the job,
harvest metadata is filled in, and each mapped dataset (or deletion) is written to the WARC as a
`resource` record (see docs/metadata-harvesting.md). Third-party backends join through the
`swath.backends` entry point group.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, NotRequired, TypedDict
from urllib.parse import urlsplit

import orjson
import requests

from swath.core.jsontypes import JSONable
from swath.harvesters.base import Harvest, Harvester, State
from swath.harvesters.capture import quote_part, safe_uri
from swath.harvesters.errors import HarvestError, HarvestStopped
from swath.harvesters.http import RecordingAdapter, read_limited
from swath.harvesters.mapping.dataset import Dataset
from swath.harvesters.mapping.errors import MetadataError, TooLarge
from swath.harvesters.mapping.record import (
    DELETED,
    DONE,
    FAILED,
    RECORD_CONTENT_TYPE,
    SKIPPED,
    Source,
    record_headers,
    record_payload,
)
from swath.harvesters.retry import Attempt, RetryPolicy, Wait
from swath.harvesters.warc_records import LAST_RESPONSE
from swath.messages import codes

# third-party backends without a platform declaration; a platform's own backend is in its declaration
# the option every backend platform reads (BackendHarvester), for their declarations' option schemas
MAX_RETRY_AFTER = 600.0  # seconds; a longer Retry-After is treated as a failure
RETRY_AFTER_ATTEMPTS = 5
# Only the waits a 503 asks for: the engine's recording session retries on its own before an answer gets
# here, and a dry run's plain session reports every other refusal as the backend always has.
RETRY_POLICY = RetryPolicy(retries=RETRY_AFTER_ATTEMPTS, backoff=None, max_wait=MAX_RETRY_AFTER, max_rate_limits=0)


Params = Mapping[str, str | int | float | None]  # a GET's query parameters (None: left out)


@dataclass(kw_only=True)
class Item:
    """A remote item found while listing (udata's HarvestItem before processing)."""

    remote_id: str
    uri: str | None = None  # identifies the remote item; the record's WARC-Target-URI
    deleted: bool = False  # the source marked it deleted
    data: Any = None  # what the listing already fetched, for process()
    error: str | None = None  # a listing-time problem: the item fails with this message
    anonymous: bool = False  # remote_id is only a placeholder (the source gave none): not tracked
    quoted_id: str | None = None  # quote_part(remote_id), when the backend made it for `uri`: not made twice


@dataclass(frozen=True)
class Page:
    """Yielded by list_items between items: everything listed so far is done, and `cursor` (JSON) is where
    a resumed listing starts (handed back as `Backend.resume`). Counts are checkpointed with it."""

    cursor: JSONable


@dataclass(kw_only=True)
class Fetched:
    url: str
    content: bytes
    content_type: str
    headers: dict[str, str]


class BackendArgs(TypedDict):
    """What a Backend is built with (a subclass's `__init__(**kwargs: Unpack[BackendArgs])` hands them on)."""

    source: Source
    http: requests.Session
    max_bytes: int
    state: State
    stopping: NotRequired[Callable[[], bool]]
    timeout: NotRequired[float]
    resume: NotRequired[JSONable]


class Backend:
    """Base class: override `list_items` (yield Items, and a Page after each remote page so an interrupted
    harvest resumes there) and `process`; set `full_listing` False when the listing is partial."""

    name: ClassVar[str] = ""
    display_name: ClassVar[str] = ""

    def __init__(self, *, source: Source, http: requests.Session, max_bytes: int,
                 state: State, stopping: Callable[[], bool] = lambda: False, timeout: float = 60.0,
                 resume: JSONable = None) -> None:
        self.source = source
        self.resume = resume  # the cursor of the interrupted run's last Page, or None: list from the start
        self.http = http
        self.max_bytes = max_bytes
        self.state = state
        self.stopping = stopping
        self.timeout = timeout
        # True when list_items walked the whole source (not incremental): absent items are then deletions
        self.full_listing = True
        self.notes: list[tuple[str, str, str]] = []  # (info|warning, code, message) for the status

    def note(self, kind: str, code: str, message: str) -> None:
        """An info or warning about this source, put in the status once its listing has ended."""
        self.notes.append((kind, code, message))

    # --- hooks ---
    def list_items(self) -> Iterator[Item | Page]:
        raise NotImplementedError

    def process(self, item: Item) -> Dataset | None:
        """Map one item; None means skipped (nothing to harvest); raise to fail this item only."""
        raise NotImplementedError

    def item_uri(self, item: Item) -> str:
        return item.uri or f"{self.source.public_url}#{item.remote_id}"

    def commit(self) -> None:
        """Stage backend state (e.g. the next `from` date) after a listing that ended without error."""

    # --- helpers ---
    def state_key(self, name: str) -> str:
        return f"{self.name}:{name}:{self.source.id}"

    def fetch(self, url: str, *, params: Params | None = None, accept: str | None = None) -> Fetched:
        """GET `url`; waits out 503 + Retry-After; MetadataError for other errors and oversize bodies."""
        headers = {"Accept": accept} if accept else {}
        # The engine's recording session enforces the size limit itself; any other (dry run) is read here.
        own_limit = not isinstance(self.http.get_adapter(url), RecordingAdapter)
        attempt = Attempt()
        while True:
            resp = self.http.get(url, params=params, headers=headers, timeout=self.timeout, stream=own_limit)
            decision = RETRY_POLICY.decide(status=resp.status_code, headers=resp.headers, attempt=attempt,
                                           now=time.time())
            if not isinstance(decision, Wait):
                break
            resp.close()
            if not self._sleep(decision.seconds):
                break
            attempt = decision.attempt
        if resp.status_code >= 400:
            resp.close()
            code = codes.TOKEN_NOT_FOUND if resp.status_code == 404 else codes.REMOTE_ERROR
            raise MetadataError(f"{resp.url} answered HTTP {resp.status_code}", code=code)
        content = self._read_limited(resp) if own_limit else resp.content
        return Fetched(url=resp.url, content=content, content_type=resp.headers.get("Content-Type", ""),
                       headers=dict(resp.headers))

    def _read_limited(self, resp: requests.Response) -> bytes:
        def too_large() -> TooLarge:
            return TooLarge(f"{resp.url}: over the limit of {self.max_bytes} bytes")

        with resp:
            return read_limited(resp.iter_content(65536), limit=self.max_bytes, too_large=too_large)

    def fetch_json(self, url: str, *, params: Params | None = None) -> Any:
        fetched = self.fetch(url, params=params, accept="application/json")
        try:
            return orjson.loads(fetched.content)
        except orjson.JSONDecodeError as exc:
            raise MetadataError(f"{fetched.url}: malformed JSON: {exc}") from None

    def _sleep(self, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.stopping():
                return False
            time.sleep(min(0.2, max(0.0, end - time.monotonic())))
        return True


# --- running one source -------------------------------------------------------------------------

@dataclass
class Outcome:
    """What one source's run did, by item status; errors are (remote_id, message)."""

    counts: dict[str, int] = field(default_factory=lambda: {DONE: 0, SKIPPED: 0, FAILED: 0, DELETED: 0})
    errors: list[tuple[str, str]] = field(default_factory=list)
    listing_error: MetadataError | Exception | None = None


class _Run:
    """One source's run: per-item outcomes, records, deletions and state (udata's process_dataset)."""

    def __init__(self, harvest: Harvest, backend: Backend, *, dry_run: bool) -> None:
        self.harvest, self.backend, self.dry_run = harvest, backend, dry_run
        self.outcome = Outcome()
        self.pending: dict[str, int] = {}  # counted since the last Page: checkpointed with the next one
        self.present: set[str] = set()  # listed and not deleted
        self.gone: set[str] = set()  # marked deleted by the source
        self.named = 0  # items a dry run has named in dry_run_item infos
        self.urn = item_record_uri(backend.name, backend.source.id, "")  # the fixed part, quoted once per source

    def item(self, item: Item) -> None:
        rid = item.remote_id
        if rid in self.present or rid in self.gone:
            self._count(SKIPPED)  # listed twice (e.g. modified while we paged): harvested once
            return
        if item.deleted:
            self.gone.add(rid)
            self._emit(item, None, DELETED, reason="marked")
            return
        if not item.anonymous:
            self.present.add(rid)
        if item.error:
            self._fail(rid, item.error)
            return
        try:
            dataset = self.backend.process(item)
        except HarvestStopped:
            raise
        except Exception as exc:  # one bad item never stops the job
            self._fail(rid, f"{type(exc).__name__}: {exc}" if not isinstance(exc, MetadataError) else str(exc))
            return
        if dataset is None:
            self._count(SKIPPED)
            return
        self._emit(item, dataset, DONE)

    def _emit(self, item: Item, dataset: Dataset | None, status: str, *, reason: str | None = None) -> None:
        self._count(status)
        if self.dry_run:
            if dataset is not None and self.named < DRY_RUN_ITEMS:
                self.named += 1
                self.harvest.info(codes.DRY_RUN_ITEM, dry_run_item(item.remote_id, dataset), self.backend.source.id)
            return
        backend, rid = self.backend, item.remote_id
        headers = record_headers(backend.name, backend.source, rid, status)
        headers[ITEM_URI_HEADER] = safe_uri(backend.item_uri(item))  # the item's own URI: never fetched as such
        if reason != "disappeared":  # read from the answer just recorded (a disappearance is an absence)
            headers["WARC-Refers-To"] = LAST_RESPONSE
        self.harvest.write_record(
            # item_record_uri(backend.name, backend.source.id, rid)
            uri=self.urn + (item.quoted_id if item.quoted_id is not None else quote_part(rid)),
            record_type="resource",
            payload=record_payload(backend.name, backend.source, rid, dataset=dataset,
                                   status=status, reason=reason),
            content_type=RECORD_CONTENT_TYPE,
            headers=headers,
        )

    def _fail(self, rid: str, message: str) -> None:
        self._count(FAILED)
        self.outcome.errors.append((rid, message))
        if len(self.outcome.errors) <= MAX_ITEM_ERRORS:
            self.harvest.error(codes.ITEM_FAILED, f"{rid}: {message}", self.backend.source.id)

    def _count(self, status: str) -> None:
        self.outcome.counts[status] += 1
        self.pending[status] = self.pending.get(status, 0) + 1

    def checkpoint(self, cursor: JSONable) -> None:
        """The items so far are recorded: counts and cursor in one step, so a resumed run (which starts at
        the cursor with these counts) counts each item once. {"done": true} once the source is finished."""
        self.harvest.checkpoint(checkpoint_key(self.backend), cursor, **self.pending)
        self.pending = {}

    def finish(self, previous: set[str]) -> None:
        backend, complete = self.backend, self.outcome.listing_error is None and not self.harvest.stopping
        # a resumed listing saw only its second part: absent ids there are no evidence of deletion
        if complete and backend.full_listing and backend.resume is None:
            for rid in sorted(previous - self.present - self.gone):  # disappeared from the source
                self.gone.add(rid)
                self._emit(Item(remote_id=rid), None, DELETED, reason="disappeared")
            current = set(self.present)
        else:
            current = (previous | self.present) - self.gone
        for kind, code, message in backend.notes:
            report = self.harvest.warning if kind == "warning" else self.harvest.info
            report(code, f"{backend.source.public_url}: {message}", backend.source.id)
        extra = len(self.outcome.errors) - MAX_ITEM_ERRORS
        if extra > 0:
            self.harvest.error(codes.ITEM_FAILED, f"... and {extra} more failed items", backend.source.id)
        if self.dry_run:
            self.checkpoint(DONE_CURSOR)
            counts = self.outcome.counts
            self.harvest.info(codes.DRY_RUN, f"dry run of {backend.source.public_url}: {counts[DONE]} would be "
                              f"harvested, {counts[DELETED]} deleted, {counts[SKIPPED]} skipped, "
                              f"{counts[FAILED]} failed; nothing written", backend.source.id)
            return
        self.harvest.state.set(backend.state_key("ids"), sorted(current))
        if complete:
            backend.commit()
        if not self.harvest.stopping:  # a shutdown keeps the last Page: the resumed run redoes the rest
            self.checkpoint(DONE_CURSOR)


MAX_ITEM_ERRORS = 100  # per source; the rest are summed up in one line
DRY_RUN_ITEMS = 10  # per source: a dry run shows what its first items would be (the web preview's table)


def dry_run_item(remote_id: str, dataset: Dataset) -> str:
    """An item as the dataset export's id, title, last_modified and url columns would show it, as JSON."""
    return orjson.dumps({"id": remote_id, "title": dataset.title, "last_modified": dataset.last_modified,
                         "url": dataset.extras.get("uri")}, default=str).decode()
DONE_CURSOR = {"done": True}  # a source's checkpoint once it is finished: a resumed harvest skips it


def checkpoint_key(backend: Backend) -> str:
    return f"source:{backend.name}:{backend.source.id}"


ITEM_URI_HEADER = "WARC-Swath-Item-URI"


def item_record_uri(backend: str, source_id: str, remote_id: str) -> str:
    """The WARC-Target-URI of an item's record: a URN of its own, so replay tools never present the mapped
    JSON as the archived copy of a URL (docs/harvesting.md "WARC files")."""
    return f"urn:swath:{backend}:{quote_part(source_id)}:{quote_part(remote_id)}"


def run_source(harvest: Harvest, backend: Backend, *, dry_run: bool = False) -> Outcome:
    """List and process every item of one source; a listing error ends the listing, never the job."""
    run = _Run(harvest, backend, dry_run=dry_run)
    previous = set(harvest.state.get(backend.state_key("ids"), None) or [])
    try:
        for item in backend.list_items():
            if harvest.stopping:
                break
            if isinstance(item, Page):
                run.checkpoint(item.cursor)
            else:
                run.item(item)
    except HarvestStopped:
        pass
    except (MetadataError, HarvestError) as exc:
        run.outcome.listing_error = exc
        harvest.error(exc.code, f"{backend.source.public_url}: {exc}", backend.source.id)
    except requests.RequestException as exc:
        run.outcome.listing_error = exc
        harvest.error(codes.REMOTE_ERROR, f"{backend.source.public_url}: {type(exc).__name__}", backend.source.id)
    except Exception as exc:  # a backend bug ends this source's listing, not the other seeds
        run.outcome.listing_error = exc
        harvest.error(codes.UNKNOWN_ERROR, f"{backend.source.public_url}: listing failed: {type(exc).__name__}: {exc}",
                      backend.source.id)
    run.finish(previous)
    return run.outcome


class BackendHarvester(Harvester):
    """A Harvester running one Backend over every seed (token = endpoint base URL)."""

    backend: ClassVar[type[Backend]]

    def harvest_sources(self) -> None:
        start, config = self.harvest.start, self.harvest.config
        dry_run = bool(start.options.get("dryrun"))
        # A dry run writes nothing durable: not even the HTTP exchanges (an unrecorded session).
        http = self.harvest.unrecorded_session() if dry_run else self.harvest.http
        try:
            for seed in start.seeds:
                if self.harvest.stopping:
                    return
                url = str(seed.token or "").strip()
                if urlsplit(url).scheme not in {"http", "https"}:
                    self.harvest.error(codes.BAD_REQUEST, f"seed token {url!r} is not an http(s) URL", seed.id)
                    continue
                backend = self.backend(
                    source=Source(id=seed.id, url=url, options=dict(start.options)), http=http,
                    max_bytes=config.max_response_bytes, state=self.harvest.state,
                    stopping=lambda: self.harvest.stopping, timeout=config.http_timeout,
                )
                backend.resume = self.harvest.resume_point(checkpoint_key(backend))
                if backend.resume == DONE_CURSOR:
                    continue  # finished (and counted) before the interruption
                run_source(self.harvest, backend, dry_run=dry_run)
        finally:
            if dry_run:
                http.close()


def harvester_for(backend: type[Backend], *, service: str | None = None) -> type[BackendHarvester]:
    """A Harvester class for a backend (type = platform = backend name), e.g. for an entry-point backend."""
    return type(f"{backend.__name__}Harvester", (BackendHarvester,), {
        "platform": backend.name,
        "service": service or f"{backend.display_name or backend.name} Harvester",
        "types": {backend.name: "harvest_sources"},
        "backend": backend,
    })
