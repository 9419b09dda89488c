"""Jetstream's frames as NDJSON lines, and the rule that moves the cursor (docs/bluesky.md "Cursor").

The cursor is the `time_us` of the last event recorded: reconnects ask from it, and frames at or before it
are replays, dropped before they are recorded (counted: `events_dropped`). Only a plausible event moves it:
one not dated more than FUTURE_BOUND_US after this machine's clock, and later than the cursor (time_us is
monotonic on a connection). An event dated further ahead is recorded and flagged (`event_future_dated`) but
leaves the cursor where it was, so one bad event cannot make every later event look like a replay.
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

POST = "app.bsky.feed.post"
FUTURE_BOUND_US = 60 * 1_000_000  # clock skew allowed between Jetstream and this machine
FLAGGED_NAMED = 5  # future-dated events named in a warning; the rest are counted


class Event:
    """One event's parts the harvest uses; its name is made only when a warning needs it."""

    __slots__ = ("time_us", "is_post", "_value")

    def __init__(self, time_us: int, is_post: bool, value: dict[str, Any]) -> None:
        self.time_us = time_us
        self.is_post = is_post  # it created a post
        self._value = value

    @property
    def name(self) -> str:
        """How a warning names it: time_us, DID, collection/rkey."""
        commit = self._value.get("commit")
        commit = commit if isinstance(commit, dict) else {}
        return f"time_us {self.time_us} ({self._value.get('did')} {commit.get('collection')}/{commit.get('rkey')})"


def event_of(line: bytes | str) -> Event | None:
    """The event of a line; None for a line that is not an event with an integer time_us."""
    try:
        value: Any = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    time_us = value.get("time_us") if isinstance(value, dict) else None
    if type(time_us) is not int:
        return None
    commit = value.get("commit")
    is_post = isinstance(commit, dict) and commit.get("collection") == POST and commit.get("operation") == "create"
    return Event(time_us, is_post, value)


def plausible(time_us: int) -> bool:
    """Not dated further after this machine's clock than clocks disagree."""
    return time_us <= time.time_ns() // 1000 + FUTURE_BOUND_US


READ_BYTES = 1 << 16  # a read without a size hands on at most this much


class Taken(NamedTuple):
    """What the lines handed on so far hold: events, posts created, and the cursor they moved to."""

    events: int
    posts: int
    at: int | None


@dataclass
class Cursor:
    """The run's cursor and what its rule set aside, across the run's connections."""

    floor: int | None  # time_us of the last plausible event recorded
    dropped: int = 0  # replays (at or before the floor, or a flagged event sent again): not recorded
    flagged: list[str] = field(default_factory=list)  # future-dated events recorded, not made the cursor
    _flagged_lines: set[bytes] = field(default_factory=set)
    _bound: int = -1  # a plausible time_us bound read from the clock: an event under it needs no new reading

    def judge(self, line: bytes, event: Event | None) -> tuple[bool, int | None]:
        """(record the line?, the time_us it moves the cursor to, or None)."""
        if event is None:
            return True, None  # not an event: recorded as received, counted by the reader
        if event.time_us > self._bound:  # the clock is read again only for an event past the last bound
            self._bound = time.time_ns() // 1000 + FUTURE_BOUND_US
        if event.time_us > self._bound:
            if line in self._flagged_lines:  # a replay of a flagged event (its time is after any cursor)
                self.dropped += 1
                return False, None
            self._flagged_lines.add(line)
            self.flagged.append(event.name)
            return True, None
        if self.floor is not None and event.time_us <= self.floor:
            self.dropped += 1
            return False, None
        self.floor = event.time_us
        return True, event.time_us

    def recorded(self, flagged: list[bytes]) -> None:
        """Future-dated events already in the WARCs (a resumed run's): a replay of one is not recorded again."""
        self._flagged_lines.update(flagged)


class Frames:
    """A WebSocket's text frames as NDJSON bytes for the stream tap (its `upstream`): one line per frame,
    replays dropped by the run's `Cursor`, the closing error kept for the caller. Each read hands on the frames
    already received (up to the size asked), each parsed once here; `taken` is what the lines handed on whole
    so far hold, so the reader checkpoints what the rule decided without reading them again."""

    def __init__(self, ws: ClientConnection, *, url: str, cursor: Cursor) -> None:
        self.ws = ws
        self.url = url
        self.cursor = cursor
        self.start = cursor.floor  # the cursor this connection asked from
        self.taken = Taken(0, 0, cursor.floor)  # the events of the lines handed on whole
        self.handed = 0  # frames handed on
        self.bad = 0  # text frames that are not events with a time_us: recorded as received
        self.binary = 0  # binary frames (Jetstream sends text unless asked to compress): not recorded
        self.error: BaseException | None = None  # what ended the connection, if not a clean close
        self._pending = b""
        self._staged = self.taken  # what `taken` becomes once _pending is handed on whole

    def read1(self, size: int = -1, decode_content: bool = True) -> bytes:
        limit = READ_BYTES if size is None or size < 0 else size
        if not self._pending:
            self._receive(limit)
        if len(self._pending) <= limit:
            out, self._pending = self._pending, b""
            self.taken = self._staged
            return out
        out, self._pending = self._pending[:limit], self._pending[limit:]  # a line longer than asked for
        return out

    def _receive(self, limit: int) -> None:
        """Wait for a frame, then take those already received without waiting, up to `limit` bytes."""
        lines: list[bytes] = []
        size, (events, posts, at) = 0, self._staged
        cursor = self.cursor
        while size < limit:
            try:
                message = self.ws.recv(0 if lines else None)  # once a line is kept: only what has arrived
            except TimeoutError:
                break  # nothing more received yet: hand on what is here
            except ConnectionClosed as exc:
                if lines:
                    break  # the next read gets it again (websockets raises it on every recv after the close)
                if exc.rcvd is None or exc.rcvd.code != 1000:
                    self.error = exc
                break
            except Exception as exc:  # a socket shut by stop(), a broken frame: the connection is over
                if lines:
                    break
                self.error = exc
                raise
            if isinstance(message, bytes):
                self.binary += 1
                continue
            # JSON allows CR/LF only as whitespace between tokens: a space keeps it one line, same meaning
            line = message.encode("utf-8").replace(b"\r", b" ").replace(b"\n", b" ")
            event = event_of(line)
            keep, moved = cursor.judge(line, event)
            if not keep:
                continue
            if event is None:
                self.bad += 1
            else:
                events, posts = events + 1, posts + event.is_post
                at = at if moved is None else moved
            self.handed += 1
            lines.append(line)
            size += len(line) + 1
        self._staged = Taken(events, posts, at)
        if lines:
            lines.append(b"")
            self._pending = b"\n".join(lines)

    def shutdown(self) -> None:
        """From another thread: wake a blocked recv (harvest.stop) without waiting for a close handshake."""
        try:
            self.ws.socket.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self.ws.close()
