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
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import orjson
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection

POST = "app.bsky.feed.post"
FUTURE_BOUND_US = 60 * 1_000_000  # clock skew allowed between Jetstream and this machine
FLAGGED_NAMED = 5  # future-dated events named in a warning; the rest are counted


@dataclass(frozen=True)
class Event:
    time_us: int
    is_post: bool  # it created a post
    name: str  # how a warning names it: time_us, DID, collection/rkey


def event_of(line: bytes) -> Event | None:
    """The event of a line; None for a line that is not an event with an integer time_us."""
    try:
        value: Any = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    time_us = value.get("time_us") if isinstance(value, dict) else None
    if type(time_us) is not int:
        return None
    commit = value.get("commit")
    commit = commit if isinstance(commit, dict) else {}
    is_post = commit.get("collection") == POST and commit.get("operation") == "create"
    name = f"time_us {time_us} ({value.get('did')} {commit.get('collection')}/{commit.get('rkey')})"
    return Event(time_us, is_post, name)


def plausible(time_us: int) -> bool:
    """Not dated further after this machine's clock than clocks disagree."""
    return time_us <= time.time_ns() // 1000 + FUTURE_BOUND_US


@dataclass
class Cursor:
    """The run's cursor and what its rule set aside, across the run's connections."""

    floor: int | None  # time_us of the last plausible event recorded
    dropped: int = 0  # replays (at or before the floor, or a flagged event sent again): not recorded
    flagged: list[str] = field(default_factory=list)  # future-dated events recorded, not made the cursor
    _flagged_lines: set[bytes] = field(default_factory=set)

    def judge(self, line: bytes, event: Event | None) -> tuple[bool, int | None]:
        """(record the line?, the time_us it moves the cursor to, or None)."""
        if event is None:
            return True, None  # not an event: recorded as received, counted by the reader
        if not plausible(event.time_us):
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
    replays dropped by the run's `Cursor`, the closing error kept for the caller. `moves` holds, per line
    handed on, the cursor it moved to (None: unmoved), so the reader checkpoints what the rule decided."""

    def __init__(self, ws: ClientConnection, *, url: str, cursor: Cursor) -> None:
        self.ws = ws
        self.url = url
        self.cursor = cursor
        self.start = cursor.floor  # the cursor this connection asked from
        self.moves: deque[int | None] = deque()
        self.handed = 0  # frames handed on
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
            keep, moved = self.cursor.judge(line, event_of(line))
            if not keep:
                continue
            self.moves.append(moved)
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
