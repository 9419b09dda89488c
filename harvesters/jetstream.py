"""The bluesky_jetstream harvest: Jetstream's WebSocket firehose recorded to WARC as it arrives.

One connection is recorded as (docs/bluesky.md "Jetstream in the WARC"):
- a `request` record (the GET upgrade; WARC-Target-URI the subscribe URL with its cursor in its http(s) form,
  `WARC-Swath-WebSocket-URI` the ws(s):// URL itself) and a
  `response` record (`101 Switching Protocols` and the handshake headers, no body), then
- `resource` records, `Content-Type: application/x-ndjson`, one per segment: the text frames received,
  one JSON event per line, `WARC-Concurrent-To` the request and `WARC-Swath-Stream-Segment: n`.
Segments are cut like an HTTP stream's (harvesters/streams.py: by size, on rotation, stop and close).

Every event's `time_us` is checkpointed with its counts. A dropped connection reconnects with
`cursor=<last time_us>`; frames at or before it (a replay) are dropped before they are recorded, so the
WARCs hold each event once whether the server's cursor is inclusive or not. A run resuming an
interrupted harvest (kill -9) starts from the last event in its WARCs, recovered ones included.
"""

from __future__ import annotations

import io
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import orjson
from warcio.archiveiterator import ArchiveIterator
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidURI
from websockets.sync.client import ClientConnection, connect

from swath.harvesters.base import Harvest
from swath.harvesters.capture import warc_date
from swath.harvesters.errors import HarvestStopped, RemoteError, StreamLineTooLong
from swath.harvesters.http import RecordingAdapter
from swath.harvesters.streams import StreamRecording
from swath.harvesters.warc import find_harvest_warcs
from swath.messages import codes

DEFAULT_URL = "wss://jetstream2.us-east.bsky.network"
DEFAULT_COLLECTIONS = ("app.bsky.feed.post",)
CURSOR = "bluesky.jetstream.time_us"  # checkpoint: the last event recorded
NDJSON = "application/x-ndjson"
WS_HEADER = "WARC-Swath-WebSocket-URI"  # the ws(s):// URL the records' http(s) target stands for
POST = "app.bsky.feed.post"


def subscribe_url(base: str, *, collections: list[str], dids: list[str], cursor: int | None) -> str:
    query = [("wantedCollections", c) for c in collections] + [("wantedDids", d) for d in dids]
    if cursor is not None:
        query.append(("cursor", str(cursor)))
    return f"{base.rstrip('/').removesuffix('/subscribe')}/subscribe?{urlencode(query)}"


def event_of(line: bytes) -> tuple[int, bool] | None:
    """(time_us, whether it created a post) of an event line; None for a line that is not an event with an
    integer time_us."""
    try:
        value: Any = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    time_us = value.get("time_us") if isinstance(value, dict) else None
    if type(time_us) is not int:
        return None
    commit = value.get("commit")
    is_post = isinstance(commit, dict) and commit.get("collection") == POST and commit.get("operation") == "create"
    return time_us, is_post


class Frames:
    """A WebSocket's text frames as NDJSON bytes for the stream tap (its `upstream`): one line per frame,
    replays (time_us at or before the last one handed on) dropped, the closing error kept for the caller."""

    def __init__(self, ws: ClientConnection, *, url: str, floor: int | None) -> None:
        self.ws = ws
        self.url = url
        self.floor = floor  # time_us of the last event handed on
        self.handed = 0  # frames handed on
        self.replayed = 0  # frames dropped as replays
        self.binary = 0  # binary frames (Jetstream sends text unless asked to compress): not recorded
        self.error: BaseException | None = None  # what ended the connection, if not a clean close
        self._pending = b""

    def read1(self, size: int = -1, decode_content: bool = True) -> bytes:
        while not self._pending:
            try:
                message = self.ws.recv()
            except ConnectionClosed as exc:
                if exc.rcvd is None or exc.rcvd.code != 1000:
                    self.error = exc
                return b""
            except Exception as exc:  # a socket shut by stop(), a broken frame: the connection is over
                self.error = exc
                raise
            if isinstance(message, bytes):
                self.binary += 1
                continue
            # JSON allows CR/LF only as whitespace between tokens: a space keeps it one line, same meaning
            line = message.encode("utf-8").replace(b"\r", b" ").replace(b"\n", b" ")
            event = event_of(line)
            time_us = event[0] if event else None
            if time_us is not None and self.floor is not None and time_us <= self.floor:
                self.replayed += 1
                continue
            if time_us is not None:
                self.floor = time_us
            self.handed += 1
            self._pending = line + b"\n"
        cut = len(self._pending) if size is None or size < 0 else size
        out, self._pending = self._pending[:cut], self._pending[cut:]
        return out

    def shutdown(self) -> None:
        """From another thread: wake a blocked recv (harvest.stop) without waiting for a close handshake."""
        try:
            self.ws.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.ws.close()


class WebSocketRecording(StreamRecording):
    """The stream tap of one WebSocket connection: the handshake as a request/response pair, written at
    once, then each segment of frames as a resource record (see the module docstring)."""

    def __init__(self, *, adapter: RecordingAdapter, frames: Frames, uri: str) -> None:
        super().__init__(sink=adapter.sink, factory=adapter.factory, upstream=frames, pair={},
                         max_line_bytes=adapter.limits.max_line_bytes)
        # the handshake is an HTTP GET to the http(s) form of the ws(s) URL (RFC 6455 section 3): WARC readers
        # parse HTTP records of http(s) URIs only, so that is the records' target; the ws URL is kept beside it
        self.ws_uri = adapter.redactor.url(uri)
        self.uri = "http" + self.ws_uri.removeprefix("ws")
        ws, factory = frames.ws, adapter.factory
        request, response = ws.request, ws.response
        assert request is not None and response is not None  # connect() returns after the handshake
        pair = dict(uri=self.uri, request_line=f"GET {request.path} HTTP/1.1",
                    request_headers=adapter.redactor.headers(list(request.headers.raw_items())), request_body=b"",
                    status_line=f"{response.status_code} {response.reason_phrase}",
                    response_headers=list(response.headers.raw_items()), response_body=b"",
                    extra={"WARC-Date": warc_date(), WS_HEADER: self.ws_uri}, request_id=self.request_id)
        self.sink.write_records(lambda: factory.pair(**pair))

    def records(self, body: bytes, extra: dict[str, str], *, first: bool) -> Callable[[], list]:
        headers = {**extra, "WARC-Concurrent-To": self.request_id, WS_HEADER: self.ws_uri}
        return lambda: [self.factory.plain(uri=self.uri, record_type="resource", payload=body,
                                           content_type=NDJSON, headers=headers)]


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
    floor = harvest.resume_point(CURSOR)
    if harvest.resumed:
        floor = catch_up(harvest, floor)
    adapter = harvest.recording_adapter([])
    assert isinstance(adapter, RecordingAdapter)  # the recorder's own: its sink and record factory
    limits, failures = adapter.limits, 0
    while not harvest.stopping:
        url = subscribe_url(base, collections=collections, dids=dids, cursor=floor)
        frames = _open(url, adapter, floor)
        if frames is None:
            failures += 1
            if failures > limits.retries:
                raise RemoteError(f"could not connect to the Jetstream at {base} after {limits.retries} retries")
            if not harvest.sleep(min(limits.backoff * 2 ** (failures - 1), 60.0)):
                break
            continue
        handed = _read(harvest, adapter, frames)
        floor = frames.floor
        failures = 0 if handed else failures + 1
        if harvest.stopping:
            break
        if failures > limits.retries:
            raise RemoteError(f"the Jetstream at {base} kept closing without an event")
        why = type(frames.error).__name__ if frames.error else "closed by the server"
        harvest.info(codes.JETSTREAM_RECONNECTED, f"Jetstream connection ended ({why}); reconnecting from "
                                                  f"cursor {floor}")
        if not handed and not harvest.sleep(min(limits.backoff * 2 ** (failures - 1), 60.0)):
            break


def _open(url: str, adapter: RecordingAdapter, floor: int | None) -> Frames | None:
    """A connection handed its first frames by the tap; None when it could not be made (retried)."""
    limits = adapter.limits
    try:
        ws = connect(url, open_timeout=min(limits.deadline, limits.timeout), close_timeout=1.0,
                     max_size=limits.max_line_bytes, compression=None)
    except (InvalidURI, ValueError) as exc:
        raise RemoteError(f"the Jetstream URL {adapter.redactor.url(url)} is not usable: {exc}") from None
    except (OSError, TimeoutError, InvalidHandshake) as exc:
        adapter.sink.debug(f"Jetstream connect to {url} failed: {type(exc).__name__}")
        return None
    return Frames(ws, url=url, floor=floor)


def _read(harvest: Harvest, adapter: RecordingAdapter, frames: Frames) -> int:
    """Record and read one connection to its end, counting and checkpointing each event; the frames
    handed on."""
    tap = WebSocketRecording(adapter=adapter, frames=frames, uri=frames.url)
    adapter.sink.add_stream(tap)  # the recorder's: harvest.stop and rotation reach the tap
    if harvest.stopping:
        tap.stop()  # the stop came between the loop's check and the registration
    bad = 0
    with frames.ws:  # websockets wants its connections used as context managers
        try:
            for line in io.BufferedReader(tap, buffer_size=1 << 16):
                event = event_of(line)
                if event is None:
                    bad += 1
                    continue
                time_us, is_post = event
                harvest.checkpoint(CURSOR, time_us, events=1, **({"posts": 1} if is_post else {}))
        except HarvestStopped:
            pass
        finally:
            tap.close()
    if bad:
        harvest.warning(codes.BAD_RESPONSE, f"{bad} Jetstream frame(s) were not events with a time_us; "
                                            "recorded as received")
    if frames.binary:
        harvest.warning(codes.BAD_RESPONSE, f"{frames.binary} binary Jetstream frame(s) were not recorded")
    if isinstance(frames.error, ConnectionClosed) and frames.error.sent is not None \
            and frames.error.sent.code == 1009:  # reconnecting would get the same frame again
        raise StreamLineTooLong(f"a Jetstream frame passed {adapter.limits.max_line_bytes} bytes "
                                "(SWATH_STREAM_MAX_LINE_BYTES); the events before it are in the WARC")
    return frames.handed


def catch_up(harvest: Harvest, floor: int | None) -> int | None:
    """The events an interrupted run recorded after its last committed checkpoint (a WARC recovered after
    kill -9 holds them): counted and checkpointed now; returns the last event's time_us."""
    done, _ = find_harvest_warcs(harvest.directory, harvest.start.id)
    events = posts = 0
    newest = floor
    for path in reversed(done):  # by serial: the newest first
        older = False
        with open(path, "rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type != "resource" or record.rec_headers.get_header("Content-Type") != NDJSON:
                    continue
                for line in record.content_stream().read().splitlines():
                    event = event_of(line)
                    if event is None:
                        continue
                    if floor is not None and event[0] <= floor:
                        older = True
                        continue
                    events, posts = events + 1, posts + event[1]
                    newest = event[0] if newest is None else max(newest, event[0])
        if older:
            break  # WARCs before this one hold only events counted already
    if newest is not None and newest != floor:
        harvest.checkpoint(CURSOR, newest, events=events, posts=posts)
    return newest

