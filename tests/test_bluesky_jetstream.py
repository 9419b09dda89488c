"""bluesky_jetstream: the Jetstream WebSocket recorded to WARC, filtered, reconnected from its cursor, stopped by
harvest.stop, resumed after kill -9 without a lost or doubled event, and exported."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import time
from pathlib import Path

import orjson
import pytest
from warcio.archiveiterator import ArchiveIterator

from swath.harvesters.run import run_harvest
from swath.messages import codes
from tests.enginekit import HarvestProcess, context, harvest_thread, read_records, wait_for, warc_files, warcio_check
from tests.fakes.bluesky import FakeJetstream
from tests.fakes.social import start_body
from tests.test_bluesky import export_rows
from tests.test_warc_replay import cdxj

ALICE, BOB = "did:plc:alice0000000000000000001", "did:plc:bob000000000000000000002"
ROUTING_KEY = "harvest.start.bluesky.bluesky_jetstream"
ROOT = Path(__file__).resolve().parents[1]


def recorded_events(paths: list[Path]) -> list[dict]:
    """Every event in the WARCs' Jetstream resource records, in file order (read with warcio)."""
    events = []
    for path in paths:
        with path.open("rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "resource" and "/subscribe" in rec.rec_headers.get_header("WARC-Target-URI"):
                    assert rec.rec_headers.get_header("Content-Type") == "application/x-ndjson"
                    events += [orjson.loads(line) for line in rec.content_stream().read().splitlines()]
    return events


def counted(statuses: list[dict], label: str) -> int:
    return sum(day.get(label, 0) for day in statuses[-1]["stats"].values()) if statuses else 0


def test_jetstream_filters_reconnects_from_its_cursor_stops_and_exports(config, data_root):
    config = dataclasses.replace(config, status_interval=0.1, warc_max_seconds=0.5)
    with FakeJetstream(drop_after=6, drops=2) as fake:
        posts = fake.emit(10, did=ALICE)
        fake.emit(4, did=ALICE, collection="app.bsky.feed.like")  # not a wanted collection
        fake.emit(4, did=BOB)  # not a wanted DID
        deletes = fake.delete(posts[:3])
        wanted = posts + deletes
        body = start_body("bluesky_jetstream", [{"id": "alice", "token": ALICE}], credentials={},
                          options={"jetstream_url": fake.url, "collections": ["app.bsky.feed.post"]})
        ctx, published = context(config)
        thread, outcome = harvest_thread(body, routing_key=ROUTING_KEY, ctx=ctx)
        try:
            wait_for(lambda: counted(published.statuses, "events") == len(wanted), what="every wanted event")
        finally:
            ctx.stop.set()
        thread.join(120)
        assert outcome == ["returned"]
        connections = list(fake.connections)

    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    assert counted([final], "events") == len(wanted) and counted([final], "posts") == len(posts)
    assert [n["code"] for n in final["infos"]].count(codes.JETSTREAM_RECONNECTED) == 2
    # each reconnect asked from the last event received; the replayed event was not recorded again
    assert [c.get("cursor", [None])[0] for c in connections] == \
        [None, str(wanted[5]["time_us"]), str(wanted[10]["time_us"])]
    assert all(c["wantedDids"] == [ALICE] and c["wantedCollections"] == ["app.bsky.feed.post"] for c in connections)
    files = warc_files(data_root)
    assert len(files) == len(published.warcs) and warcio_check(files).returncode == 0
    assert recorded_events(files) == wanted
    # the handshakes are request/101 response pairs; pywb's indexer reads every record
    lines = cdxj(files)
    assert sum(1 for _, _, f in lines if f.get("status") == "101") == len(connections)
    assert sum(1 for _, _, f in lines if f.get("mime") == "application/x-ndjson") >= 1

    status, rows = export_rows(config, "bluesky_jetstream", "j1")
    assert status["status"] == "completed success", status
    alive = posts[3:]  # the deleted three are tombstones
    assert sorted(r["id"] for r in rows) == sorted(f"at://{ALICE}/app.bsky.feed.post/{e['commit']['rkey']}"
                                                   for e in alive)
    row = next(r for r in rows if r["id"].endswith(alive[0]["commit"]["rkey"]))
    assert row["text"] == alive[0]["commit"]["record"]["text"] and row["author_did"] == ALICE
    assert row["url"] == f"https://bsky.app/profile/{ALICE}/post/{alive[0]['commit']['rkey']}"
    _, everything = export_rows(config, "bluesky_jetstream", "j2", dedupe=False)
    assert len(everything) == len(posts)


def runner(message: Path, env: dict[str, str]) -> HarvestProcess:
    """`python -m swath.harvesters.embedded MESSAGE` in a subprocess; its status lines collected."""
    return HarvestProcess(["swath.harvesters.embedded", str(message), ROUTING_KEY], env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("killed_with", ["events_in_memory", "events_in_an_open_warc"])
def test_jetstream_resumes_after_kill_9_without_loss_or_duplicates(config, data_root, tmp_path, killed_with):
    in_warc = killed_with == "events_in_an_open_warc"
    with FakeJetstream() as fake:
        body = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": fake.url},
                          harvest_id="jet:kill9")
        message = tmp_path / "start.json"
        message.write_text(json.dumps(body))
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("SWATH_")},
               "SWATH_DATA_ROOT": str(data_root), "SWATH_WARC_MAX_SECONDS": "300" if in_warc else "0.3",
               "SWATH_STATUS_INTERVAL": "0.1", "PYTHONPATH": str(ROOT)}
        first = runner(message, env)
        if in_warc:  # more than a segment's 1 MiB: written to the open WARC, which is never closed
            fake.emit(2500, pad=600)
            wait_for(lambda: any(p.stat().st_size > 8192 for p in data_root.rglob("*.open")),
                     what="a segment in the open WARC")
        else:  # a closed WARC, then events that reach only the harvester's memory
            fake.emit(15)
            wait_for(lambda: counted(first.statuses, "events") == 15 and warc_files(data_root),
                     what="a closed WARC")
            fake.emit(7)
            wait_for(lambda: len(fake.sent) == 22, what="the last events sent")
        first.proc.send_signal(signal.SIGKILL)
        first.wait()
        before = len(fake.events)

        second = runner(message, env)
        wait_for(lambda: len(fake.connections) == 2, what="the resumed run's connection")
        fake.emit(8)
        wait_for(lambda: counted(second.statuses, "events") == before + 8, what="every event counted once")
        second.proc.send_signal(signal.SIGINT)  # harvest.stop
        assert second.wait() == 0
        events = list(fake.events)

    final = second.statuses[-1]
    assert final["status"] == "completed success", final
    assert counted([final], "events") == counted([final], "posts") == len(events) == before + 8
    warned = [n["code"] for n in final["warnings"]]
    assert codes.HARVEST_RESUMED in warned
    assert codes.WARC_RECOVERED in warned or not in_warc  # its events were counted from the recovered WARC
    files = warc_files(data_root)
    assert not list(data_root.rglob("*.open")) and warcio_check(files).returncode == 0
    assert [e["time_us"] for e in recorded_events(files)] == [e["time_us"] for e in events]  # once each, in order
    # the resumed connection asked from the newest event in the WARCs, recovered ones included
    cursor = int(fake.connections[1]["cursor"][0])
    assert cursor in [e["time_us"] for e in events[:before]]


def test_a_frame_over_the_line_limit_ends_the_harvest_and_keeps_what_came_before(config, data_root):
    config = dataclasses.replace(config, stream_max_line_bytes=2000)
    with FakeJetstream() as fake:
        before = fake.emit(3, did=ALICE)
        big = fake.emit(1, did=ALICE)[0]
        big["commit"]["record"]["text"] = "x" * 5000
        body = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": fake.url})
        ctx, published = context(config)
        run_harvest(body, routing_key=ROUTING_KEY, ctx=ctx)  # ends by itself: no stop needed

    final = published.statuses[-1]
    assert final["status"] == "completed failure"
    assert [n["code"] for n in final["errors"]] == [codes.LINE_TOO_LONG]
    assert recorded_events(warc_files(data_root)) == before
    assert len(fake.connections) == 1  # not reconnected into the same frame


def test_jetstream_url_with_credentials_or_a_query_is_refused_before_the_harvest():
    from swath.messages.settings import problems

    for url in ("wss://user:secret@jetstream.example/subscribe", "wss://jetstream.example/subscribe?cursor=1",
                "https://jetstream.example"):
        found = problems("bluesky_jetstream", options={"jetstream_url": url}, seeds=[], credentials=[])
        assert found and "jetstream_url" in found[0], (url, found)
    assert problems("bluesky_jetstream", options={"jetstream_url": "wss://jetstream2.us-east.bsky.network"},
                    seeds=[], credentials=[]) == []


def test_frames_that_are_not_events_are_recorded_or_counted_and_said(config, data_root):
    config = dataclasses.replace(config, status_interval=0.1)
    with FakeJetstream() as fake:
        first = fake.emit(2, did=ALICE)
        fake.raw("not json at all", b"\x28\xb5\x2f\xfd binary")
        second = fake.emit(2, did=ALICE)
        body = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": fake.url})
        ctx, published = context(config)
        thread, outcome = harvest_thread(body, routing_key=ROUTING_KEY, ctx=ctx)
        try:
            wait_for(lambda: counted(published.statuses, "events") == 4, what="the four events")
        finally:
            ctx.stop.set()
        thread.join(120)
        assert outcome == ["returned"]

    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    warnings = [n["message"] for n in final["warnings"] if n["code"] == codes.BAD_RESPONSE]
    assert len(warnings) == 2 and "1 Jetstream frame" in warnings[0] and "1 binary" in warnings[1]
    lines = [line for path in warc_files(data_root) for line in _resource_lines(path)]
    assert lines[2] == b"not json at all"  # recorded as received, in its place: nothing dropped silently
    assert [orjson.loads(x) for x in lines[:2] + lines[3:]] == first + second
    failed, _ = export_rows(config, "bluesky_jetstream", "bad")
    assert failed["status"] == "completed failure"  # an unreadable line fails the export unless asked to skip
    status, rows = export_rows(config, "bluesky_jetstream", "skip", skip_unreadable=True)
    assert status["status"] == "completed success" and len(rows) == 4


def _resource_lines(path: Path) -> list[bytes]:
    with path.open("rb") as fh:
        return [line for rec in ArchiveIterator(fh) if rec.rec_type == "resource"
                for line in rec.content_stream().read().splitlines()]


def test_a_jetstream_url_that_is_no_websocket_fails_after_the_retries(config, data_root):
    from tests.fakes.httpserver import FakeServer

    config = dataclasses.replace(config, http_retries=2, http_backoff=0.01)
    with FakeServer() as server:  # answers the upgrade with a 404
        body = start_body("bluesky_jetstream", [], credentials={},
                          options={"jetstream_url": server.url.replace("http://", "ws://")})
        ctx, published = context(config)
        run_harvest(body, routing_key=ROUTING_KEY, ctx=ctx)
        asked = len(server.requests_to("/subscribe"))
    final = published.statuses[-1]
    assert final["status"] == "completed failure"
    assert [n["code"] for n in final["errors"]] == [codes.REMOTE_ERROR]
    assert asked == 3  # the first try and two retries
    # each refused upgrade is in the WARC: the request and the server's answer, body as sent
    records = read_records(warc_files(data_root))
    answers = [(status, body) for kind, uri, status, _, body, _ in records if kind == "response"]
    assert answers == [("404", b'{"error": "not found"}')] * asked
    upgrades = [h for kind, _, _, h, _, _ in records if kind == "request"]
    assert len(upgrades) == asked and all(h.get_header("Upgrade") == "websocket" for h in upgrades)


def _run_until(config, body: dict, done) -> list[dict]:
    """A Jetstream harvest on a thread, stopped once `done(statuses)`; the statuses it published."""
    ctx, published = context(config)
    thread, outcome = harvest_thread(body, routing_key=ROUTING_KEY, ctx=ctx)
    try:
        wait_for(lambda: done(published.statuses), what="the events counted")
    finally:
        ctx.stop.set()
    thread.join(120)
    assert outcome == ["returned"]
    return published.statuses


def test_a_future_dated_event_is_recorded_and_flagged_and_drops_nothing_after_it(config, data_root):
    config = dataclasses.replace(config, status_interval=0.1)
    with FakeJetstream(drop_after=7, drops=1) as fake:  # the connection ends two events after the bad one
        before = fake.emit(4, did=ALICE)
        ten_years = 10 * 365 * 24 * 3600 * 1_000_000
        future = fake.emit(1, did=ALICE, at=int(time.time() * 1e6) + ten_years)[0]
        after = fake.emit(6, did=ALICE)
        events = before + [future] + after
        body = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": fake.url})
        statuses = _run_until(config, body, lambda s: counted(s, "events") == len(events))
        connections, sent = list(fake.connections), list(fake.sent)

    final = statuses[-1]
    assert final["status"] == "completed success", final
    assert recorded_events(warc_files(data_root)) == events  # each once, in order, the bad one kept
    # the reconnect asked from the last plausible event, not from ten years ahead
    assert [c.get("cursor", [None])[0] for c in connections] == [None, str(after[1]["time_us"])]
    warnings = {n["code"]: n["message"] for n in final["warnings"]}
    flagged = warnings[codes.EVENT_FUTURE_DATED]
    assert flagged.startswith("1 Jetstream event") and str(future["time_us"]) in flagged
    assert future["commit"]["rkey"] in flagged
    replays = len(sent) - len(set(sent))  # what the fake sent twice: the cursor's own event and the bad one
    assert replays == 2 and warnings[codes.EVENTS_DROPPED].startswith(f"{replays} Jetstream event(s) dropped")


def test_a_new_harvest_of_the_collection_continues_from_its_cursor_unless_told_not_to(config, data_root):
    config = dataclasses.replace(config, status_interval=0.1)
    with FakeJetstream() as fake:
        first = fake.emit(5, did=ALICE)
        options = {"jetstream_url": fake.url}
        one = _run_until(config, start_body("bluesky_jetstream", [], credentials={}, options=options,
                                            harvest_id="jet:day1"), lambda s: counted(s, "events") == 5)
        meanwhile = fake.emit(4, did=ALICE)  # published while no harvest ran
        two = _run_until(config, start_body("bluesky_jetstream", [], credentials={}, options=options,
                                            harvest_id="jet:day2"), lambda s: counted(s, "events") == 4)
        live = {**options, "continue_cursor": False}
        _run_until(config, start_body("bluesky_jetstream", [], credentials={}, options=live,
                                      harvest_id="jet:day3"), lambda s: counted(s, "events") >= 1)
        connections = list(fake.connections)

    assert one[-1]["status"] == two[-1]["status"] == "completed success"
    # day 2 asked from day 1's last event; day 3, told not to continue, asked from now
    assert [c.get("cursor", [None])[0] for c in connections] == [None, str(first[-1]["time_us"]), None]
    day2 = [w for w in warc_files(data_root) if "day2" in w.name]
    assert day2 and recorded_events(day2) == meanwhile  # neither re-read nor skipped


def test_checkpoints_follow_segments_and_seconds_not_events_and_name_only_events_in_complete_warcs(
        config, data_root, monkeypatch):
    """Issue 35: a checkpoint (json.dumps of the cursor, a clock reading per count) was taken per event."""
    from swath.harvesters.ledger import Ledger
    from swath.harvesters.recorder import Recorder
    from swath.harvesters.state import StateStore
    from swath.platforms.bluesky.jetstream import COLLECTION_CURSOR, CURSOR

    checkpoints, settles, commits = [0], [0], []
    checkpoint, settle, commit = Ledger.checkpoint, Recorder.settle_streams, StateStore.commit

    def counting_checkpoint(self, key, value, **counts):
        checkpoints[0] += key == CURSOR
        checkpoint(self, key, value, **counts)

    def counting_settle(self):
        settles[0] += 1
        settle(self)

    def seen_commit(self, updates=None):
        # the WARCs complete on disk when the state names its cursor (the engine commits after their close)
        commits.append((dict(updates or {}), [p for p in warc_files(data_root)]))
        commit(self, updates)

    monkeypatch.setattr(Ledger, "checkpoint", counting_checkpoint)
    monkeypatch.setattr(Recorder, "settle_streams", counting_settle)
    monkeypatch.setattr(StateStore, "commit", seen_commit)
    config = dataclasses.replace(config, status_interval=0.1, warc_max_seconds=0.3)
    with FakeJetstream() as fake:
        events = fake.emit(3000, did=ALICE, pad=200)
        body = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": fake.url})
        statuses = _run_until(config, body, lambda s: counted(s, "events") == len(events))

    final = statuses[-1]
    assert final["status"] == "completed success", final
    assert counted([final], "events") == counted([final], "posts") == len(events)
    files = warc_files(data_root)
    assert recorded_events(files) == events
    segments = sum(1 for r in read_records(files) if r[0] == "resource")
    # one checkpoint per segment written, per settling of the streams, and one as the connection ends
    assert 0 < checkpoints[0] <= segments + settles[0] + 1 < len(events)
    named = [(u[COLLECTION_CURSOR], complete) for u, complete in commits if u.get(COLLECTION_CURSOR)]
    assert named and named[-1][0] == events[-1]["time_us"]
    for cursor, complete in named:
        assert cursor in {e["time_us"] for e in recorded_events(complete)}
