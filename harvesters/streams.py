"""Streamed responses: the tap that records a live stream as the client reads it, and lines read in
time linear in the bytes received, however long a line is.

The tap (`StreamRecording`) writes what the client read as response records, each holding the
original headers and the complete lines of one segment; the request is recorded once, with the first
segment, and later segments name it. It keeps at most one unfinished line: a line longer than
`max_line_bytes` ends the stream with `StreamLineTooLong` after recording the lines before it and the
line's received bytes (a record marked `WARC-Truncated: length`). See docs/harvesting.md.
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

import requests
from requests.models import ITER_CHUNK_SIZE
from warcio.recordloader import ArcWarcRecord

from swath.harvesters.capture import new_record_id, warc_date
from swath.harvesters.errors import StreamLineTooLong

if TYPE_CHECKING:
    from swath.harvesters.base import Harvest
    from swath.harvesters.warc_records import RecordFactory

STREAM_FLUSH_BYTES = 1 << 20  # complete lines are written as a segment once this much is buffered
CONTINUE_CURSOR = "continue_cursor"  # the option: false starts a new harvest without the collection's cursor


class StreamSink(Protocol):
    """What the tap needs from the recorder it writes into (harvesters/recorder.py `Recorder`)."""

    def write_records(self, records: list[ArcWarcRecord] | Callable[[], list[ArcWarcRecord]], *,
                      size: int = 0) -> None: ...
    def remove_stream(self, stream: StreamRecording) -> None: ...


def start_cursor(harvest: Harvest, key: str, collection_key: str) -> Any:
    """Where a cursor stream starts: this harvest's own checkpoint `key` (a resumed run), else the collection's
    last committed cursor `collection_key` (a new harvest of the collection: a daily run neither re-reads nor
    skips) unless the message's `continue_cursor` option is false; None: from now."""
    found = harvest.resume_point(key)
    if found is None and harvest.start.options.get(CONTINUE_CURSOR) is not False:
        found = harvest.state.get(collection_key)
    return found


def split_lines(chunks: Iterable[bytes]) -> Iterator[bytes]:
    """The lines of a chunked body as bytes.splitlines() gives them (\\n, \\r\\n or \\r end a line).

    Each byte is searched once: a long line costs its length, not its length squared as in requests'
    own iter_lines, which joins the pending part of a line to every chunk."""
    pending = bytearray()
    for chunk in chunks:
        searched = max(len(pending) - 1, 0)  # a \r that ended the last chunk may be half of \r\n
        pending += chunk
        end = max(pending.rfind(b"\n", searched), pending.rfind(b"\r", searched, len(pending) - 1))
        if end >= 0:
            yield from bytes(pending[: end + 1]).splitlines()
            del pending[: end + 1]
    if pending:
        yield from bytes(pending).splitlines()


class LineStreamResponse(requests.Response):
    """The Response handed out for a recorded stream: iter_lines() in linear time (twarc and the
    generic harvester read streams through it)."""

    def iter_lines(self, chunk_size: int = ITER_CHUNK_SIZE, decode_unicode: bool = False,
                   delimiter: Any = None) -> Iterator[Any]:
        if decode_unicode or delimiter is not None:  # no caller of ours; requests' own semantics
            return super().iter_lines(chunk_size, decode_unicode=True, delimiter=delimiter) if decode_unicode \
                else super().iter_lines(chunk_size, delimiter=delimiter)
        return split_lines(self.iter_content(chunk_size=chunk_size))


class Upstream(Protocol):
    """What the tap reads from: urllib3's response to a streamed request, or a WebSocket's frames
    (platforms/bluesky/jetstream_frames.py `Frames`)."""

    def read1(self, size: int, /, *, decode_content: bool) -> bytes: ...
    def close(self) -> None: ...
    def shutdown(self) -> None: ...


class Exchange(TypedDict, total=False):
    """The request and the response head of a streamed exchange: what each of its records repeats (empty for a
    tap whose `records` writes something else, the WebSocket's)."""

    uri: str
    request_line: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status_line: str
    response_headers: list[tuple[str, str]]
    protocol: str


class StreamRecording(io.RawIOBase):
    """A streamed response body: the client reads decoded bytes through it; what it read is written
    as response records, each holding the original headers and the complete lines of one segment."""

    def __init__(self, *, sink: StreamSink, factory: RecordFactory, upstream: Upstream, pair: Exchange,
                 max_line_bytes: int) -> None:
        super().__init__()
        self.sink = sink
        self.factory = factory
        self.upstream = upstream
        self.pair = pair
        self.max_line_bytes = max_line_bytes
        self.segment = 0
        self.request_id = new_record_id()  # the connection's one request record; later segments name it
        self._flushed_at = 0  # epoch second of the last segment: a size flush waits for the next second
        self._buffer = bytearray()
        self._complete = 0  # bytes of _buffer up to and including its last newline
        self._lock = threading.Lock()
        self._flush_lock = threading.Lock()
        self._finished = False
        self._stopped = False  # harvest.stop/shutdown: read no more from the socket
        self._error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        """What one read from the connection brings (at most `size` bytes; b"" at the end), so a client may
        take a stream's bytes as they arrive (urllib3's `read1` on the tap) rather than fill fixed-size chunks."""
        return self.read(size if size > 0 else STREAM_FLUSH_BYTES) or b""

    @property
    def buffered(self) -> int:
        """Bytes read by the client and not yet written to a WARC."""
        with self._lock:
            return len(self._buffer)

    def readinto(self, target: Any) -> int:
        if self._error is not None:
            error, self._error = self._error, None
            super().close()
            raise error
        if self._finished:
            return 0
        if self._stopped:
            self.finish()
            return 0
        try:
            data = self.upstream.read1(len(target), decode_content=True)
        except Exception as exc:
            # Report EOF now and raise on the next read: urllib3 then first hands the client the
            # bytes it buffered from earlier reads (already in the WARC) instead of dropping them.
            self.finish()
            if not self._stopped:  # a read broken by stop() is the stream's clean end
                self._error = exc
            return 0
        if not data:
            self.finish()
            return 0
        with self._lock:
            newline = data.rfind(b"\n")  # only the new bytes are searched: linear in the stream
            if newline >= 0:
                self._complete = len(self._buffer) + newline + 1
            self._buffer += data
            unfinished = len(self._buffer) - self._complete
            # one size-triggered segment a second at most, so each capture has a second of its own
            full = (self._complete > 0 and len(self._buffer) >= STREAM_FLUSH_BYTES
                    and int(time.time()) != self._flushed_at)
        if unfinished > self.max_line_bytes:
            self._line_too_long(unfinished)
            return 0
        target[: len(data)] = data
        if full:
            self.flush_segment()
        return len(data)

    def _line_too_long(self, received: int) -> None:
        """Record the complete lines, then the long line's bytes marked truncated; end the stream with
        an error the client gets on its next read."""
        self.flush_segment()
        self.flush_segment(final=True, truncated=True)
        self.finish()
        self._error = StreamLineTooLong(
            f"a stream line passed {self.max_line_bytes} bytes without ending (SWATH_STREAM_MAX_LINE_BYTES); "
            f"its first {received} bytes and the lines before it are in the WARC, marked WARC-Truncated")

    def flush_segment(self, *, final: bool = False, truncated: bool = False) -> None:
        """Write the complete lines received so far (everything when final) as one response record."""
        with self._flush_lock:  # held while writing, so segments reach the WARC in order
            with self._lock:
                cut = len(self._buffer) if final else self._complete
                if cut == 0:
                    return
                body = bytes(self._buffer[:cut])
                del self._buffer[:cut]
                self._complete = 0
                self.segment += 1
                first = self.segment == 1
            self._flushed_at = int(time.time())
            extra = {"WARC-Swath-Stream-Segment": str(self.segment), "WARC-Date": warc_date()}
            if truncated:
                extra["WARC-Truncated"] = "length"
            self.sink.write_records(self.records(body, extra, first=first), size=len(body))

    def records(self, body: bytes, extra: dict[str, str], *, first: bool) -> Callable[[], list[ArcWarcRecord]]:
        """What one segment is written as (built on the writer thread); a subclass may record it otherwise."""
        # the request once per connection (with the first segment); later segments point at it
        build = self.factory.pair if first else self.factory.segment
        return lambda: build(**self.pair, response_body=body, extra=extra, request_id=self.request_id)

    def settle(self) -> None:
        """Once a second from the recorder: a tap that counts for its client checkpoints what it holds
        (platforms/bluesky/jetstream.py); this one leaves counting to the client."""

    def finish(self) -> None:
        """End of the stream (EOF, error or close): record the rest and give the connection back."""
        if self._finished:
            return
        self._finished = True
        try:
            self.flush_segment(final=True)
        finally:
            self.sink.remove_stream(self)
            self.upstream.close()

    def stop(self) -> None:
        """From another thread on harvest.stop or shutdown: read no more from the socket (waking a read
        blocked on it) and report EOF, so the client still gets, and counts, every byte recorded."""
        self._stopped = True
        try:
            self.upstream.shutdown()
        except Exception:  # already closed or released: nothing is blocked on it
            pass

    def close(self) -> None:
        self.finish()
        if self._error is None:  # stay readable so the pending error is raised, not lost
            super().close()
