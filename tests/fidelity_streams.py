"""The fidelity property (tests/fidelity.py) for the stream platforms, on fakes that publish on a clock of their own:

(a) each connection's bytes in the WARC, its segments joined in order, are what the fake sent on it (secrets
    masked): all of it for a connection the fake ended, a prefix of it for one the harvest cut (a stop, a shutdown);
(b) every item the fake published from the first subscription on is exported exactly once, across forced
    reconnects, WARC rotations and a shutdown mid-stream followed by the same start again (the resume): what the
    stream missed comes back through the platform's backfill (Mastodon's timeline) or cursor replay (Jetstream).
    A stream with neither (Twitter's sample and filtered streams: `backfills=False`) promises less, and that is
    what is checked: every item on the connections the harvest read is exported once (all of a connection the
    fake ended, the recorded part of one the harvest cut), nothing else is, and none published while no harvest
    ran is (docs/harvest-types.md: a client that reconnects loses nothing it read; there is no backfill).

A `StreamCase` says per platform how to make its fake, drop its connections, and read what it sent."""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from warcio.archiveiterator import ArchiveIterator

from swath.core.config import Config
from swath.core.jobs import JobInterrupted
from swath.harvesters import registry
from swath.messages.routing import key
from tests.enginekit import context, harvest_thread, wait_for, warc_files
from tests.fakes.bluesky import FakeJetstream
from tests.fakes.mastodon import TOKEN, FakeMastodon
from tests.fakes.social import publishing
from tests.fakes.twitter import BEARER_TOKEN, FakeTwitter
from tests.fidelity import Run, export_ids, masked

ALICE = "did:plc:alice0000000000000000001"
TAG = "libraries"
MASTODON_STREAM = "/api/v1/streaming/"
PER_PHASE = 30  # items on the stream between two forced reconnects: longer than a WARC lasts


@dataclass(frozen=True)
class StreamCase:
    name: str
    harvest_type: str
    make: Callable[[], Any]  # the fake, a context manager
    seeds: Callable[[Any], list[dict]]
    options: Callable[[Any], dict]
    publish: Callable[[Any], str]  # one new item, the export's id of it
    drop: Callable[[Any], None]  # end every open connection: the harvest must reconnect
    connections: Callable[[Any], int]  # connections the fake has seen
    delivered: Callable[[Any], set[str]]  # ids of the items written to some connection
    sent: Callable[[Any], list[bytes]]  # what went out on each connection, in order, as the harvest records it
    stream_path: str  # the stream's URL path: its records in the WARCs
    record_type: str = "response"  # what a segment of the stream is recorded as
    api: str | None = None
    credentials: dict[str, str] = field(default_factory=dict)
    id_column: str = "id"
    backfills: bool = True  # what a connection missed is fetched again (a backfill, a cursor replay)
    line_ids: Callable[[bytes], list[str]] = lambda body: []  # no backfill: the ids of the items in a stream's bytes


@dataclass
class StreamRun:
    published: list[str]  # item ids, in order, from the first subscription on
    cut: set[int]  # connections the harvest ended (shutdown, stop): their WARC bytes a prefix of what was sent
    sent: list[bytes]
    recorded: list[tuple[int, bytes]]
    rest: Run  # the requests besides the stream (Mastodon's backfills, Twitter's rules), for check_bodies
    final: dict  # the final status of the resumed run (the one shut down has none)
    exported: list[str]
    down: list[str]  # items published between the shutdown and the resumed run's start


def harvest_stream(config: Config, case: StreamCase, fake: Any, *, every: float) -> StreamRun:
    """One start of the stream, shut down mid-stream and started again (the resume), while the fake publishes
    every `every` seconds; a forced reconnect in each run, a last one once the publisher stopped (so every item
    it published was read), then harvest.stop."""
    body = {"id": f"fidelity:{uuid.uuid4().hex[:8]}", "type": case.harvest_type, "path": "collections/cs-fid/c-fid",
            "seeds": case.seeds(fake), "options": case.options(fake), "credentials": dict(case.credentials),
            "collection_set": {"id": "cs-fid"}, "collection": {"id": "c-fid"}}
    routing_key = key("harvest_start", registry.lookup(case.harvest_type).platform, case.harvest_type)
    cut: set[int] = set()

    def flowing(n: int) -> None:  # `n` more items reached a connection
        seen = len(case.delivered(fake))
        wait_for(lambda: len(case.delivered(fake)) >= seen + n, what=f"{n} more items on the stream")

    def reconnect() -> None:
        opened = case.connections(fake)
        case.drop(fake)
        wait_for(lambda: case.connections(fake) > opened, what="the reconnect")

    ctx, statuses = context(config)
    thread, outcome = harvest_thread(body, routing_key=routing_key, ctx=ctx)
    wait_for(lambda: case.connections(fake) >= 1, what="the first subscription")
    with publishing(lambda: case.publish(fake), every=every) as published:
        flowing(PER_PHASE)
        reconnect()
        flowing(PER_PHASE)
        cut.add(case.connections(fake) - 1)
        ctx.shutdown.set()  # as on SIGTERM: the run ends without a final status, the message is redelivered
        ctx.stop.set()
        thread.join(120)
        assert len(outcome) == 1 and isinstance(outcome[0], JobInterrupted), outcome
        assert all(s["status"] == "running" for s in statuses.statuses)
        opened, at_shutdown = case.connections(fake), len(published)
        wait_for(lambda: len(published) >= at_shutdown + 2, what="items published while no harvest runs")
        down = [str(i) for i in published[at_shutdown:]]
        ctx, statuses = context(config)
        thread, outcome = harvest_thread(body, routing_key=routing_key, ctx=ctx)
        wait_for(lambda: case.connections(fake) > opened, what="the resumed run's subscription")
        flowing(PER_PHASE)
        reconnect()
        flowing(PER_PHASE)
    ids = [str(i) for i in published]
    wait_for(lambda: ids[-1] in case.delivered(fake), what="the last item on the stream")
    reconnect()  # the harvest read the connection before to its end
    cut.add(case.connections(fake) - 1)
    ctx.stop.set()
    thread.join(120)
    assert outcome == ["returned"], outcome
    case.drop(fake)  # ends the connections the harvest cut, so the fake logs what it sent on them
    files = warc_files(config.data_root / "collections")
    return StreamRun(published=ids, cut=cut, sent=case.sent(fake),
                     recorded=joined(files, case.record_type, case.stream_path), final=statuses.statuses[-1],
                     rest=rest_of(case, fake, files), exported=export_ids(config, case),  # type: ignore[arg-type]
                     down=down)


def rest_of(case: StreamCase, fake: Any, files: list[Path]) -> Run:
    """The answers besides the stream's, and the WARCs' response records besides the stream's (and besides a
    WebSocket's handshake)."""
    served = [r for r in fake.server.served(status=None) if r.path != case.stream_path] \
        if hasattr(fake, "server") else []
    stored = []
    for file in files:
        with open(file, "rb") as fh:
            stored += [rec.raw_stream.read() for rec in ArchiveIterator(fh) if rec.rec_type == "response"
                       and urlsplit(rec.rec_headers.get_header("WARC-Target-URI")).path != case.stream_path]
    return Run(served=served, stored=stored, warcs=len(files), listed=set(), exported=[], final={})


def joined(files: list[Path], rec_type: str, path: str) -> list[tuple[int, bytes]]:
    """Per connection, in the order their request records were written: (its segments of `rec_type` on `path`,
    their bytes joined in order). A connection's first HTTP segment is named by the request record written with
    it (`WARC-Concurrent-To` the response), later segments and WebSocket frames name the request."""
    parts: dict[str, list[bytes]] = {}
    first_of: dict[str, str] = {}
    records: list[tuple[str, bytes]] = []
    for file in files:
        with open(file, "rb") as fh:
            for rec in ArchiveIterator(fh):
                headers = rec.rec_headers
                if urlsplit(headers.get_header("WARC-Target-URI") or "").path != path:
                    continue
                if rec.rec_type == "request":
                    parts[headers.get_header("WARC-Record-ID")] = []
                    first_of[headers.get_header("WARC-Concurrent-To")] = headers.get_header("WARC-Record-ID")
                elif rec.rec_type == rec_type and headers.get_header("WARC-Swath-Stream-Segment"):
                    records.append((headers.get_header("WARC-Concurrent-To") or headers.get_header("WARC-Record-ID"),
                                    rec.raw_stream.read()))
    for conn, body in records:
        parts[first_of.get(conn, conn)].append(body)
    return [(len(bodies), b"".join(bodies)) for bodies in parts.values()]


def check_stream_bytes(run: StreamRun, secrets: list[str]) -> int:
    """(a) for the stream: connection by connection, its segments joined are what the fake sent on it (a
    prefix where the harvest cut it). Returns the number of segments compared."""
    sent = [masked(body, secrets) for body in run.sent]
    # an HTTP stream's request is recorded with its first segment: the last connection, stopped before the
    # harvest read a byte of it, has none
    missing = len(sent) - len(run.recorded)
    assert missing == 0 or (missing == 1 and len(sent) - 1 in run.cut), \
        f"{len(run.recorded)} connections in the WARCs, {len(sent)} made"
    run.recorded += [(0, b"")] * missing
    assert any(n > 1 for n, _ in run.recorded), "no connection was cut into segments: the check joined nothing"
    for number, ((_, stored), went) in enumerate(zip(run.recorded, sent, strict=True)):
        if number in run.cut:
            assert went.startswith(stored), f"connection {number}: the WARC's bytes are not what the fake sent"
        else:
            assert stored == went, f"connection {number}, read to its end: the WARC's bytes differ from the fake's"
    return sum(n for n, _ in run.recorded)


def check_stream_items(run: StreamRun, case: StreamCase) -> int:
    """(b) for the stream: every item published from the first subscription on exported once, nothing else; for
    a stream without backfill, every item on what the harvest read. Returns the number of items checked."""
    twice = sorted({i for i in run.exported if run.exported.count(i) > 1})
    assert not twice, f"exported more than once: {twice[:5]}"
    if case.backfills:
        expected = set(run.published)
    else:  # a connection the harvest cut: the part it read is the part recorded (check_stream_bytes)
        read = [stored if n in run.cut else went for n, ((_, stored), went) in enumerate(zip(run.recorded, run.sent))]
        expected = {i for body in read for i in case.line_ids(body)}
        assert not set(run.down) & set(run.exported), "an item published while no harvest ran was exported"
    assert expected - set(run.exported) == set(), \
        f"published but not exported: {sorted(expected - set(run.exported))[:5]}"
    assert set(run.exported) - expected == set(), \
        f"exported but never published: {sorted(set(run.exported) - expected)[:5]}"
    return len(expected)


def _http_sent(path: str) -> Callable[[Any], list[bytes]]:
    """What each connection to a streaming `path` sent, in order, once the fake ended each."""
    def sent(fake: Any) -> list[bytes]:
        wait_for(lambda: all(r.sent is not None for r in fake.server.requests if r.path == path),
                 what="every stream connection ended")
        return [r.sent or b"" for r in fake.server.served(path, status=None) if r.path == path]
    return sent


def _tweet_ids(body: bytes) -> list[str]:
    """The tweets of a stream's bytes; a last line the harvest cut mid-tweet is no tweet it read."""
    lines = [line for line in body.splitlines(keepends=True) if line.strip()]
    ids = []
    for number, line in enumerate(lines, 1):
        try:
            ids.append(json.loads(line)["data"]["id"])
        except ValueError:
            if number < len(lines) or line.endswith((b"\n", b"\r")):
                raise
    return ids


def _jetstream_sent(fake: FakeJetstream) -> list[bytes]:
    """What each connection sent, as the harvest records it: a line per frame, less the replays at or before
    the cursor it asked from (the harvest drops those, platforms/bluesky/jetstream_frames.py)."""
    out = []
    for query, frames in zip(list(fake.connections), list(fake.frames), strict=True):
        cursor = int(query.get("cursor", ["-1"])[0])
        out.append(b"".join(f.encode() + b"\n" for f in frames
                            if isinstance(f, str) and _time_us(f) > cursor))
    return out


def _time_us(frame: str) -> int:
    return json.loads(frame)["time_us"]


def _jet_post(fake: FakeJetstream) -> str:
    event = fake.emit(1, did=ALICE)[0]
    return f"at://{ALICE}/{event['commit']['collection']}/{event['commit']['rkey']}"


def _jet_delivered(fake: FakeJetstream) -> set[str]:
    sent = set(fake.sent)
    return {f"at://{ALICE}/app.bsky.feed.post/{e['commit']['rkey']}" for e in list(fake.events)
            if e["time_us"] in sent}


def _fake_twitter() -> FakeTwitter:
    fake = FakeTwitter(drop_after=0)
    fake.world.live = []  # every tweet streamed is one published during the run
    return fake


MASTODON_STREAM_CASE = StreamCase(
    name="mastodon_stream", harvest_type="mastodon_stream", api="mastodon",
    make=lambda: FakeMastodon(statuses_per_tag=20),
    seeds=lambda fake: [{"id": "s-lib", "token": f"#{TAG}"}], options=lambda fake: {},
    credentials={"access_token": TOKEN}, publish=lambda fake: fake.post(TAG)["id"],
    drop=lambda fake: fake.drop_streams(), connections=lambda fake: fake.stream_connections,
    delivered=lambda fake: set(fake.streamed), sent=_http_sent(f"{MASTODON_STREAM}hashtag"),
    stream_path=f"{MASTODON_STREAM}hashtag")
JETSTREAM_CASE = StreamCase(
    name="bluesky_jetstream", harvest_type="bluesky_jetstream", make=FakeJetstream,
    seeds=lambda fake: [{"id": "alice", "token": ALICE}], options=lambda fake: {"jetstream_url": fake.url},
    publish=_jet_post, drop=lambda fake: fake.drop_connections(), connections=lambda fake: len(fake.connections),
    delivered=_jet_delivered, sent=_jetstream_sent, stream_path="/subscribe", record_type="resource")
TWITTER_SAMPLE_CASE = StreamCase(
    name="twitter_sample", harvest_type="twitter_sample", api="twitter", make=_fake_twitter,
    seeds=lambda fake: [], options=lambda fake: {}, credentials={"bearer_token": BEARER_TOKEN},
    publish=lambda fake: fake.publish_live()["id"], drop=lambda fake: fake.drop_streams(),
    connections=lambda fake: fake.stream_connections, delivered=lambda fake: set(fake.streamed),
    sent=_http_sent("/2/tweets/sample/stream"), stream_path="/2/tweets/sample/stream", backfills=False,
    line_ids=_tweet_ids)
TWITTER_FILTER_CASE = dataclasses.replace(
    TWITTER_SAMPLE_CASE, name="twitter_filter_stream", harvest_type="twitter_filter_stream",
    seeds=lambda fake: [{"id": "r-post", "token": {"rule": "post", "tag": "posts"}}],
    sent=_http_sent("/2/tweets/search/stream"), stream_path="/2/tweets/search/stream")

STREAM_CASES = [MASTODON_STREAM_CASE, JETSTREAM_CASE, TWITTER_SAMPLE_CASE, TWITTER_FILTER_CASE]
