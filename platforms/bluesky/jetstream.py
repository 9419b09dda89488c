"""The bluesky_jetstream harvest: Jetstream's WebSocket firehose recorded to WARC as it arrives.

One connection is recorded as (docs/bluesky.md "Jetstream in the WARC"):
- a `request` record (the GET upgrade; WARC-Target-URI the subscribe URL with its cursor in its http(s) form,
  `WARC-Swath-WebSocket-URI` the ws(s):// URL itself) and a
  `response` record (`101 Switching Protocols` and the handshake headers, no body), then
- `resource` records, `Content-Type: application/x-ndjson`, one per segment: the text frames received,
  one JSON event per line, `WARC-Concurrent-To` the request and `WARC-Swath-Stream-Segment: n`.
Segments are cut like an HTTP stream's (harvesters/streams.py: by size, on rotation, stop and close).

The newest event's `time_us` is checkpointed with the counts at each segment written and once a second,
never per event, and only for events whose lines the tap holds (a complete WARC's journal names none after
it). A dropped connection reconnects with `cursor=<last time_us>`; frames at or before it (a replay) are
dropped before they are recorded, so the WARCs hold each event once whether the server's cursor is inclusive
or not; what moves the cursor, and what is dropped or flagged, is platforms/bluesky/jetstream_frames.py's rule. A run
resuming an interrupted harvest (kill -9) starts from the last event in its WARCs, recovered ones included; a
new harvest of the collection from the collection's last committed cursor (`continue_cursor`). A refused
upgrade's answer is recorded too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlencode

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecord
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.http11 import Request, Response
from websockets.sync.client import ClientConnection, connect

from swath.harvesters.base import Harvest
from swath.harvesters.capture import warc_date
from swath.harvesters.errors import HarvestStopped, RemoteError, StreamLineTooLong
from swath.harvesters.http import RecordingAdapter
from swath.harvesters.streams import StreamRecording, start_cursor
from swath.harvesters.uploads import WarcUploader
from swath.harvesters.warc import find_harvest_warcs
from swath.messages import codes
from swath.platforms.bluesky.jetstream_frames import (
    FLAGGED_NAMED,
    FUTURE_BOUND_US,
    READ_BYTES,
    Cursor,
    Frames,
    Taken,
    event_of,
    plausible,
)

DEFAULT_URL = "wss://jetstream2.us-east.bsky.network"
DEFAULT_COLLECTIONS = ("app.bsky.feed.post",)
CURSOR = "bluesky.jetstream.time_us"  # checkpoint: the last event recorded
COLLECTION_CURSOR = "bluesky.jetstream.cursor"  # state: the collection's last committed cursor
NDJSON = "application/x-ndjson"
WS_HEADER = "WARC-Swath-WebSocket-URI"  # the ws(s):// URL the records' http(s) target stands for


def subscribe_url(base: str, *, collections: list[str], dids: list[str], cursor: int | None) -> str:
    query = [("wantedCollections", c) for c in collections] + [("wantedDids", d) for d in dids]
    if cursor is not None:
        query.append(("cursor", str(cursor)))
    return f"{base.rstrip('/').removesuffix('/subscribe')}/subscribe?{urlencode(query)}"


class WebSocketRecording(StreamRecording):
    """The stream tap of one WebSocket connection: the handshake as a request/response pair, written at
    once, then each segment of frames as a resource record (see the module docstring). It checkpoints the
    events it took at each segment it writes and when the recorder settles its streams (once a second), never
    per event: only events whose lines it holds, so a WARC's journal names no event after the WARC's last."""

    def __init__(self, *, harvest: Harvest, adapter: RecordingAdapter, frames: Frames, uri: str) -> None:
        super().__init__(sink=adapter.sink, factory=adapter.factory, upstream=frames, pair={},
                         max_line_bytes=adapter.limits.max_line_bytes)
        self.harvest = harvest
        self.frames = frames
        self.uri, self.ws_uri = record_uris(adapter, uri)
        request, response = frames.ws.request, frames.ws.response
        assert request is not None and response is not None  # connect() returns after the handshake
        record_handshake(adapter, uri, request, response, request_id=self.request_id)
        self._taken = frames.taken  # the events of the lines in this tap's buffer or written by it
        self._settled = frames.taken  # the events checkpointed
        self._settle_lock = threading.Lock()

    def records(self, body: bytes, extra: dict[str, str], *, first: bool) -> Callable[[], list[ArcWarcRecord]]:
        headers = {**extra, "WARC-Concurrent-To": self.request_id, WS_HEADER: self.ws_uri}
        return lambda: [self.factory.plain(uri=self.uri, record_type="resource", payload=body,
                                           content_type=NDJSON, headers=headers)]

    def readinto(self, target: Any) -> int:
        n = super().readinto(target)
        with self._lock:  # after the buffer took the lines: a segment cut after this holds them
            self._taken = self.frames.taken
        return n

    def flush_segment(self, *, final: bool = False, truncated: bool = False) -> None:
        with self._lock:
            taken = self._taken  # before the cut, so the segment holds every line it counts
        super().flush_segment(final=final, truncated=truncated)
        self._checkpoint(taken)

    def settle(self) -> None:
        with self._lock:
            taken = self._taken
        self._checkpoint(taken)

    def _checkpoint(self, taken: Taken) -> None:
        """The events taken since the last checkpoint counted, the cursor moved to the newest (in order: a
        stale reading from another thread is passed over)."""
        with self._settle_lock:
            settled = self._settled
            if taken.events <= settled.events:
                return
            posts = taken.posts - settled.posts
            self.harvest.checkpoint(CURSOR, taken.at, events=taken.events - settled.events,
                                    **({"posts": posts} if posts else {}))
            if taken.at is not None:
                self.harvest.state.set(COLLECTION_CURSOR, taken.at)  # committed with the WARC holding the event
            self._settled = taken


def record_uris(adapter: RecordingAdapter, uri: str) -> tuple[str, str]:
    """(the records' target, the ws(s) URL): the handshake is an HTTP GET to the http(s) form of the ws(s) URL
    (RFC 6455 section 3), and WARC readers parse HTTP records of http(s) URIs only."""
    ws_uri = adapter.redactor.url(uri)
    return "http" + ws_uri.removeprefix("ws"), ws_uri


def record_handshake(adapter: RecordingAdapter, uri: str, request: Request, response: Response, *,
                     request_id: str | None = None) -> None:
    """The upgrade request and the server's answer as a request/response pair (a refusal with its body)."""
    target, ws_uri = record_uris(adapter, uri)
    pair = dict(uri=target, request_line=f"GET {request.path} HTTP/1.1",
                request_headers=adapter.redactor.headers(list(request.headers.raw_items())), request_body=b"",
                status_line=f"{response.status_code} {response.reason_phrase}",
                response_headers=list(response.headers.raw_items()), response_body=bytes(response.body or b""),
                extra={"WARC-Date": warc_date(), WS_HEADER: ws_uri}, request_id=request_id)
    adapter.sink.write_records(lambda: adapter.factory.pair(**pair))


def run_jetstream(harvest: Harvest) -> None:
    """Record the firehose until harvest.stop, reconnecting from the last event's cursor."""
    opts = harvest.start.options
    base = str(opts.get("jetstream_url") or DEFAULT_URL)
    collections = [str(c) for c in opts.get("collections") or DEFAULT_COLLECTIONS]
    dids = []
    for seed in harvest.start.seeds:
        if isinstance(seed.token, str) and seed.token.startswith("did:"):
            dids.append(seed.token)
        else:
            harvest.error(codes.BAD_REQUEST, "a bluesky_jetstream seed is an account's DID (did:...)", seed.id)
    if len(harvest.start.seeds) != len(dids):
        return  # a filter with a seed left out would record far more than asked for
    cursor = Cursor(start_cursor(harvest, CURSOR, COLLECTION_CURSOR))
    if harvest.resumed:
        catch_up(harvest, cursor)
    adapter = harvest.recording_adapter([])
    assert isinstance(adapter, RecordingAdapter)  # the recorder's own: its sink and record factory
    limits, failures = adapter.limits, 0
    try:
        while not harvest.stopping:
            url = subscribe_url(base, collections=collections, dids=dids, cursor=cursor.floor)
            frames = _open(url, adapter, cursor)
            if frames is None:
                failures += 1
                if failures > limits.retries:
                    raise RemoteError(f"could not connect to the Jetstream at {base} after {limits.retries} "
                                      "retries")
                if not harvest.sleep(min(limits.backoff * 2 ** (failures - 1), 60.0)):
                    break
                continue
            handed = _read(harvest, adapter, frames)
            failures = 0 if handed else failures + 1
            if harvest.stopping:
                break
            if failures > limits.retries:
                raise RemoteError(f"the Jetstream at {base} kept closing without an event")
            why = type(frames.error).__name__ if frames.error else "closed by the server"
            harvest.info(codes.JETSTREAM_RECONNECTED, f"Jetstream connection ended ({why}); reconnecting from "
                                                      f"cursor {cursor.floor}")
            if not handed and not harvest.sleep(min(limits.backoff * 2 ** (failures - 1), 60.0)):
                break
    finally:
        _report(harvest, cursor)


def _report(harvest: Harvest, cursor: Cursor) -> None:
    """What the cursor rule set aside, said once for the run: nothing dropped or flagged silently."""
    if cursor.dropped:
        harvest.warning(codes.EVENTS_DROPPED, f"{cursor.dropped} Jetstream event(s) dropped as replays: sent again "
                                              "at or before the cursor (each is in the WARCs once)")
    if cursor.flagged:
        named = "; ".join(cursor.flagged[:FLAGGED_NAMED])
        more = f" and {len(cursor.flagged) - FLAGGED_NAMED} more" if len(cursor.flagged) > FLAGGED_NAMED else ""
        harvest.warning(codes.EVENT_FUTURE_DATED, f"{len(cursor.flagged)} Jetstream event(s) dated more than "
                                                  f"{FUTURE_BOUND_US // 1_000_000} s after this machine's clock, "
                                                  f"recorded but not used as the cursor: {named}{more}")


def _open(url: str, adapter: RecordingAdapter, cursor: Cursor) -> Frames | None:
    """A connection handed its first frames by the tap; None when it could not be made (retried). A refused
    upgrade's answer is recorded."""
    limits = adapter.limits
    made: list[ClientConnection] = []

    class Kept(ClientConnection):  # websockets' connection, kept so a refused handshake's answer can be recorded
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            made.append(self)

    try:
        ws = connect(url, open_timeout=min(limits.deadline, limits.timeout), close_timeout=1.0,
                     max_size=limits.max_line_bytes, compression=None, create_connection=Kept)
    except (InvalidURI, ValueError) as exc:
        raise RemoteError(f"the Jetstream URL {adapter.redactor.url(url)} is not usable: {exc}") from None
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        refused = made[0] if made else None
        if refused is not None and refused.request is not None and refused.response is not None:
            record_handshake(adapter, url, refused.request, refused.response)
        adapter.sink.debug(f"Jetstream connect to {adapter.redactor.url(url)} failed: {type(exc).__name__}")
        return None
    return Frames(ws, url=url, cursor=cursor)


def _read(harvest: Harvest, adapter: RecordingAdapter, frames: Frames) -> int:
    """Record one connection to its end, its events counted and checkpointed by the tap; the frames handed on."""
    tap = WebSocketRecording(harvest=harvest, adapter=adapter, frames=frames, uri=frames.url)
    adapter.sink.add_stream(tap)  # the recorder's: harvest.stop, rotation and settling reach the tap
    if harvest.stopping:
        tap.stop()  # the stop came between the loop's check and the registration
    with frames.ws:  # websockets wants its connections used as context managers
        try:
            buffer = bytearray(READ_BYTES)
            while tap.readinto(buffer):
                pass  # the frames are parsed, judged and counted once, in Frames
        except HarvestStopped:
            pass
        finally:
            tap.close()
            tap.settle()
    if frames.bad:
        harvest.warning(codes.BAD_RESPONSE, f"{frames.bad} Jetstream frame(s) were not events with a time_us; "
                                            "recorded as received")
    if frames.binary:
        harvest.warning(codes.BAD_RESPONSE, f"{frames.binary} binary Jetstream frame(s) were not recorded")
    if isinstance(frames.error, ConnectionClosed) and frames.error.sent is not None \
            and frames.error.sent.code == 1009:  # reconnecting would get the same frame again
        raise StreamLineTooLong(f"a Jetstream frame passed {adapter.limits.max_line_bytes} bytes "
                                "(SWATH_STREAM_MAX_LINE_BYTES); the events before it are in the WARC")
    return frames.handed


def catch_up(harvest: Harvest, cursor: Cursor) -> None:
    """The events an interrupted run recorded after its last committed checkpoint (a WARC recovered after
    kill -9 holds them): counted and checkpointed now; the cursor moves to the newest plausible one. With object
    storage the resume has uploaded them all (the recovered one too), so they are read from the store."""
    uploader = WarcUploader.for_harvest(harvest.config, harvest.directory, harvest.start.id)
    if uploader is None:
        done, _ = find_harvest_warcs(harvest.directory, harvest.start.id)
    else:
        done = [warc.path for warc in uploader.stored()]

    def opened(path: Path) -> IO[bytes]:
        return open(path, "rb") if uploader is None else uploader.store.open_range(uploader.key(path), 0)

    floor, events, posts = cursor.floor, 0, 0
    for path in reversed(done):  # by serial: the newest first
        older, here, posts_here, flagged = False, 0, 0, list[bytes]()
        with opened(path) as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "resource" or record.rec_headers.get_header("Content-Type") != NDJSON:
                    continue
                for line in record.content_stream().read().splitlines():
                    event = event_of(line)
                    if event is None:
                        continue
                    if not plausible(event.time_us):
                        here, posts_here = here + 1, posts_here + event.is_post
                        flagged.append(line)
                    elif floor is not None and event.time_us <= floor:  # counted: only what follows is new
                        older, here, posts_here, flagged = True, 0, 0, []
                    else:
                        here, posts_here = here + 1, posts_here + event.is_post
                        cursor.floor = event.time_us if cursor.floor is None else max(cursor.floor, event.time_us)
        events, posts = events + here, posts + posts_here
        cursor.recorded(flagged)
        if older:
            break  # WARCs before this one hold only events counted already
    if events:
        harvest.checkpoint(CURSOR, cursor.floor, events=events, posts=posts)
