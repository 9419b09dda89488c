"""mastodon_stream: a hashtag, public or local timeline through the streaming API (server-sent events on the
connection Mastodon.py opens, read by a loop of our own), recorded as it arrives until harvest.stop.

Mastodon's streaming API replays nothing, so a stream that was down (a dropped connection, a worker killed
and the harvest resumed, a new harvest of the collection) subscribes first and then backfills: once the
stream's answer has begun, every post newer than the newest one seen (`since_id`) is fetched from the
matching REST timeline, and only then are the stream's events read (they wait on the connection meanwhile).
A post made in the gap is on the timeline; one made after the subscription is on the stream; one made in
between is on both and is counted once (`duplicate_posts`: the stream's copy of a post the backfill brought)
and is one row in a deduped export. The newest post seen is checkpointed with every event, so a resumed run
backfills from the last one whose WARC was complete, and staged as the collection's cursor.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import orjson
import urllib3
from mastodon import StreamListener

from swath.harvesters.base import Harvest
from swath.harvesters.errors import BadResponse, HarvestStopped, RemoteError
from swath.harvesters.streams import split_lines, start_cursor
from swath.harvesters.values import as_text
from swath.messages import codes
from swath.messages.model import Seed
from swath.platforms.mastodon.client import Clients, Target, call, hashtag, host_of, newer, target


class Harvesting(Protocol):
    """What a stream needs of harvester.py's harvester (which imports this module, not the reverse)."""

    harvest: Harvest

    @property
    def clients(self) -> Clients: ...
    def option(self, name: str) -> Any: ...
    def guarded(self, t: Target, run: Callable[[], None]) -> None: ...
    def listing(self, t: Target, what: str, fetch: Callable[..., Any], *, since: str | None, cursor: str | None,
                newest: str | None, done: bool, progress: Callable[[str | None, str | None, bool, int], None],
                limit: int | None = None) -> tuple[str | None, bool]: ...


MAX_FAILURES = 8  # reconnects in a row that brought no event before the stream is given up
MAX_WAIT = 60.0


# event -> stats label; an `update` whose data is not a post with an id is recorded, and counted as unreadable
COUNTED = {"update": "posts", "status.update": "edits", "delete": "deletions", "unreadable": "unreadable_events",
           "duplicate": "duplicate_posts"}


class _Recorder(StreamListener):
    """Reads the events Mastodon.py's stream connection brings: counts them and checkpoints the newest post id
    with each post. Its own loop, not Mastodon.py's: that one reads a byte at a time and casts every status
    into typed objects, some 16 kB/s and 8 ms an event here (bench/bench_mastodon_stream.py), where only ids
    and counts are needed; the events themselves are in the WARC as the instance sent them."""

    def __init__(self, harvester: Harvesting, key: str, collection_key: str, newest: str | None) -> None:
        super().__init__()
        self.harvester, self.key, self.collection_key, self.newest, self.events = (harvester, key, collection_key,
                                                                                  newest, 0)
        self.opened: Callable[[], None] = lambda: None  # called once a connection is subscribed: the backfill
        self.backfilled: set[str] = set()  # ids the last backfill brought: the stream's copy is not a new post

    def handle_stream(self, response: Any) -> None:
        self.opened()  # subscribed: what was made while nothing listened comes from the timeline now
        name, data = "", list[str]()
        for line in split_lines(_arrivals(response)):
            if line.startswith(b":"):  # a heartbeat
                continue
            if line:
                field, _, value = line.decode("utf-8", "replace").partition(":")
                value = value.removeprefix(" ")
                if field == "event":
                    name = value
                elif field == "data":
                    data.append(value)
                continue
            if name or data:
                self._event(name, "\n".join(data))
            name, data = "", []

    def _event(self, name: str, data: str) -> None:
        newest = None
        if name == "update":
            try:
                newest = _id(orjson.loads(data))
            except orjson.JSONDecodeError:
                newest = None
            if newest is None:  # in the WARC as sent; not a post the checkpoint can name
                name = "unreadable"
            elif newest in self.backfilled:  # made between the subscription and the backfill: on both
                self.backfilled.discard(newest)
                name = "duplicate"
        self.events += 1
        self.checkpoint(newer(self.newest, newest), **{COUNTED.get(name, "other_events"): 1})

    def checkpoint(self, newest: str | None, **counts: int) -> None:
        self.newest = newest
        harvest = self.harvester.harvest
        harvest.checkpoint(self.key, newest, **counts)
        if newest is not None:
            harvest.state.set(self.collection_key, newest)  # committed with the WARC holding the post


def _arrivals(response: Any) -> Iterator[bytes]:
    """A streamed response's bytes as each read from the connection brings them; a connection that breaks is a
    RemoteError (the stream is then reopened)."""
    raw = response.raw
    try:
        while chunk := raw.read1(65536):
            yield chunk
    except (urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError) as exc:
        raise RemoteError(f"the stream broke off: {type(exc).__name__}") from None


def _id(status: Any) -> str | None:
    return as_text(status.get("id")) if isinstance(status, dict) else None


def _stream_target(h: Harvesting, seed: Seed) -> tuple[Target, str] | None:
    """A seed's instance and what it streams: ("hashtag", tag), ("public"|"local", "")."""
    token = seed.token
    field = "hashtag" if isinstance(token, dict) and "hashtag" in token else "timeline"
    t = target(h.harvest, h.clients.api_root, seed.id, token, field)
    if t is None:
        h.harvest.error(codes.BAD_REQUEST, "seed names no hashtag or timeline (public, local)", seed.id)
        return None
    value = t.value
    if field == "timeline" and value.lower() in ("public", "local"):
        return t, value.lower()
    tag = hashtag(value)
    if tag is None:
        h.harvest.error(codes.BAD_REQUEST, f"{value!r} is not a hashtag (letters, digits, _), public or local",
                        seed.id)
        return None
    return Target(t.seed_id, t.instance, tag), "hashtag"


def run_stream(h: Harvesting) -> None:
    """Each seed's stream on a thread of its own (Mastodon's streams carry one timeline each), until stop."""
    streams = [found for seed in h.harvest.start.seeds if (found := _stream_target(h, seed)) is not None]
    for t, _ in streams:
        h.clients.client(t.instance)  # made here, once, not raced for by the threads
    failed: list[BaseException] = []

    def run(t: Target, kind: str) -> None:
        try:
            _stream(h, t, kind)
        except BaseException as exc:  # a stop ends every stream as a normal end; anything else is the harvest's
            failed.append(exc)

    threads = [threading.Thread(target=run, args=found, name=f"mastodon-stream-{found[0].seed_id}", daemon=True)
               for found in streams]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed and not all(isinstance(exc, HarvestStopped) for exc in failed):
        raise next(exc for exc in failed if not isinstance(exc, HarvestStopped))


def _stream(h: Harvesting, t: Target, kind: str) -> None:
    local = kind == "local" or bool(h.option("local"))
    media = bool(h.option("only_media"))
    what = f"the {'#' + t.value if kind == 'hashtag' else kind} stream of {t.instance}"
    connect: Callable[[Any, Any], Any]
    fetch: Callable[..., Any]
    if kind == "hashtag":
        connect = lambda c, listener: c.stream_hashtag(t.value, listener, local=local)  # noqa: E731
        fetch = lambda c, **kw: c.timeline_hashtag(t.value, local=local, only_media=media, **kw)  # noqa: E731
    else:
        connect = lambda c, listener: c.stream_public(listener, local=local, only_media=media)  # noqa: E731
        fetch = lambda c, **kw: c.timeline_public(local=local, only_media=media, **kw)  # noqa: E731
    key = f"stream:{t.seed_id}"
    stream = f"tag.{t.value.lower()}" if kind == "hashtag" else kind
    collection_key = f"mastodon.{host_of(t.instance)}.stream.{stream}"  # the collection's cursor of this stream
    recorder = _Recorder(h, key, collection_key, start_cursor(h.harvest, key, collection_key))
    h.guarded(t, lambda: _follow(h, t, what, connect, fetch, recorder))


def _follow(h: Harvesting, t: Target, what: str, connect: Callable[[Any, Any], Any],
            fetch: Callable[..., Any], recorder: _Recorder) -> None:
    """Stream, and reconnect (subscribed, then backfilling) until harvest.stop; a dead instance ends it after a
    while."""
    client = h.clients.client(t.instance)
    failures, reconnects = 0, 0
    # posts made while nothing was listening come from the timeline, once the stream is subscribed
    recorder.opened = lambda: _backfill(h, t, what, fetch, recorder) if recorder.newest is not None else None
    while True:
        try:
            before = recorder.events
            call(connect, client, recorder, what=what)  # returns when the server (or harvest.stop) ends it
            failures = 0 if recorder.events > before else failures + 1
        except HarvestStopped:
            return
        except (RemoteError, BadResponse) as exc:
            if h.harvest.stopping:
                return
            failures += 1
            h.harvest.count("stream_failures")
            if failures >= MAX_FAILURES:
                h.harvest.error(codes.INSTANCE_UNREACHABLE, f"{what}: gave up after {failures} failed "
                                                            f"connections: {exc.message}", t.seed_id)
                return
        if h.harvest.stopping:
            return
        reconnects += 1
        h.harvest.count("reconnects")
        if reconnects == 1:
            h.harvest.info(codes.STREAM_RECONNECTED, f"{what} ended; reconnecting (once subscribed, posts made "
                                                     "meanwhile are fetched from the timeline; a post on both is "
                                                     "counted once)", t.seed_id)
        wait = min(MAX_WAIT, h.harvest.config.http_backoff * 2 ** min(failures, 10))
        if not h.harvest.sleep(wait):
            return


def _backfill(h: Harvesting, t: Target, what: str, fetch: Callable[..., Any], recorder: _Recorder) -> None:
    """Every post newer than the newest seen, from the REST timeline, counted and checkpointed like the stream's;
    their ids kept, so the stream's copy of one is not counted again."""
    seen: set[str] = set()

    def fetch_seen(client: Any, **kwargs: Any) -> Any:
        page = fetch(client, **kwargs)
        if isinstance(page, list):  # anything else is refused by the listing
            seen.update(found for status in page if (found := _id(status)) is not None)
        return page

    def progress(cursor: str | None, newest: str | None, done: bool, fresh: int) -> None:
        # paged newest first: complete only at the end
        recorder.checkpoint(newest if done else recorder.newest, posts=fresh)

    recorder.backfilled = seen
    h.listing(t, f"{what} (backfill from {host_of(t.instance)})", fetch_seen, since=recorder.newest, cursor=None,
              newest=recorder.newest, done=False, progress=progress, limit=0)
