"""mastodon_stream against the fake's server-sent events: stop, dropped connections filled from the timeline,
edits and deletions in the export, a kill -9 and resume without loss; and a Mastodon harvest through
RabbitMQ to the real worker."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from swath.commands.examples import example_start
from swath.messages import codes
from swath.messages.broker import Publisher
from swath.platforms.mastodon.declaration import TYPES
from swath.platforms.mastodon.exporter import sse_events
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import warcio_check
from tests.fakes.mastodon import TOKEN, FakeMastodon, Script
from tests.fakes.social import run_harvest_job, start_body
from tests.test_mastodon import export_rows

ROOT = Path(__file__).resolve().parents[1]
TAG = "libraries"


def wait_until(check, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g}s for {what}")
        time.sleep(0.02)


def connected(fake: FakeMastodon, n: int) -> threading.Event:
    """Set once the fake has seen `n` stream connections: the harvester read the ones before to their end."""
    event = threading.Event()

    def watch() -> None:
        wait_until(lambda: fake.stream_connections >= n or fake.closed.is_set(), f"stream connection {n}", 240)
        event.set()

    threading.Thread(target=watch, daemon=True).start()
    return event


def streamed_ids(paths: list[str]) -> list[str]:
    """Ids of the `update` events in the WARCs' stream records, read with warcio (a record may begin with the
    `data:` line of an event whose `event:` line ended the record before)."""
    ids = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                uri = rec.rec_headers.get_header("WARC-Target-URI")
                if rec.rec_type == "response" and "/api/v1/streaming/" in uri:
                    for name, data in sse_events(rec.content_stream().read()):
                        if name == "update" or (name == "" and data.startswith(b"{")):
                            try:
                                ids.append(json.loads(data)["id"])
                            except ValueError:  # the half event of a connection cut short
                                continue
    return ids


def test_stream_stops_reconnects_backfills_and_exports_edits_and_deletions(config):
    with FakeMastodon() as fake:
        cfg = dataclasses.replace(config.with_api_url("mastodon", fake.url), http_backoff=0.05)
        before = {s["id"] for s in fake.tagged(TAG)}
        fake.stream_scripts = [
            Script([("post", None)] * 3 + [("edit", None), ("delete", None), ("missed", None), ("missed", None),
                                           ("drop", None)]),
            Script([("post", None)] * 2 + [("break", None)]),
        ]
        body = start_body("mastodon_stream", [{"id": "s-lib", "token": f"#{TAG}"}],
                          credentials={"access_token": TOKEN})
        out = run_harvest_job(cfg, body, stop_when=connected(fake, 3), stop_delay=0)
        posted = [s for s in fake.tagged(TAG) if s["id"] not in before]
        edited = next(s for s in posted if s["edited_at"])

    assert out.status["status"] == "completed success", out.status
    assert len(posted) == 6  # 3 + 2 missed + 2, one deleted
    assert out.count("posts") == 7 and out.count("edits") == 1 and out.count("deletions") == 1
    assert out.count("reconnects") == 2  # after the drop, and after the connection cut mid-event
    assert out.codes("infos") == [(codes.STREAM_RECONNECTED, "s-lib")]
    # the posts the stream never carried came from the timeline, asked for since the newest post seen
    streamed = streamed_ids([w["path"] for w in out.warcs])
    backfills = [r for r in fake.server.requests_to(f"/api/v1/timelines/tag/{TAG}")]
    assert [r.arg("since_id") for r in backfills] == [streamed[2], streamed[2], streamed[-1]]  # two pages, one
    assert warcio_check([Path(w["path"]) for w in out.warcs]).returncode == 0
    assert TOKEN.encode() not in out.raw_warc_bytes() and TOKEN not in json.dumps(out.sent)
    auth = {r.headers.get("Authorization") for r in fake.server.requests}
    assert auth == {f"Bearer {TOKEN}"}  # the token went with every request, to its own instance only

    status, rows = export_rows(cfg, "mastodon_stream", dedupe=True)
    assert status["status"] == "completed success", status
    assert [w["code"] for w in status["warnings"]] == [codes.STREAM_LINE_CUT]  # the half event
    assert sorted(r["id"] for r in rows) == sorted(s["id"] for s in posted)  # each once, the deleted one gone
    assert next(r for r in rows if r["id"] == edited["id"])["text"].startswith("Edited: on")


def test_an_unreadable_event_is_counted_and_the_stream_goes_on(config):
    with FakeMastodon(statuses_per_tag=20) as fake:
        fake.stream_scripts = [Script([("post", None), ("garbage", None), ("post", None), ("drop", None)])]
        out = run_harvest_job(config.with_api_url("mastodon", fake.url),
                              start_body("mastodon_stream", [{"id": "s", "token": "local"}], credentials={}),
                              stop_when=connected(fake, 2), stop_delay=0)
        streams = {r.path for r in fake.server.requests if "/streaming/" in r.path}
    assert out.status["status"] == "completed success", out.status
    assert out.count("posts") == 2 and out.count("unreadable_events") == 1
    assert streams == {"/api/v1/streaming/public/local"}


def test_a_streaming_server_elsewhere_gets_the_token_only_when_the_seed_names_it(config):
    with FakeMastodon(statuses_per_tag=20) as fake, FakeMastodon(statuses_per_tag=20) as streaming:
        fake.streaming_api = streaming.url
        cfg = config.with_api_url("mastodon", fake.url)
        streaming.stream_scripts = [Script([("post", None), ("drop", None)])]
        refused = run_harvest_job(cfg, start_body("mastodon_stream", [{"id": "s", "token": "#libraries"}],
                                                  credentials={"access_token": TOKEN}))
        assert refused.codes("errors") == [(codes.CREDENTIAL_ORIGIN_REFUSED, "s")]
        assert streaming.server.requests == []  # refused before a byte was sent

        seed = {"id": "s", "token": {"instance": fake.url, "hashtag": "libraries", "streaming": streaming.url}}
        out = run_harvest_job(cfg, start_body("mastodon_stream", [seed], credentials={"access_token": TOKEN}),
                              stop_when=connected(streaming, 2), stop_delay=0)
        auth = {r.headers.get("Authorization") for r in streaming.server.requests}
    assert out.status["status"] == "completed success", out.status
    assert out.count("posts") == 1 and auth == {f"Bearer {TOKEN}"}


def test_each_seed_is_a_stream_of_its_own(config):
    with FakeMastodon(statuses_per_tag=20) as fake:
        fake.stream_scripts = [Script([("post", None), ("post", None), ("drop", None)])] * 2
        before = {s["id"] for s in fake.statuses}
        seeds = [{"id": "s-lib", "token": "#libraries"}, {"id": "s-arch", "token": {"hashtag": "archives"}}]
        out = run_harvest_job(config.with_api_url("mastodon", fake.url),
                              start_body("mastodon_stream", seeds, credentials={}),
                              stop_when=connected(fake, 4), stop_delay=0)
        posted = {tag: [s["id"] for s in fake.tagged(tag) if s["id"] not in before]
                  for tag in ("libraries", "archives")}
        tags = sorted(r.arg("tag") for r in fake.server.requests if "/streaming/" in r.path)
    assert out.status["status"] == "completed success", out.status
    assert [len(ids) for ids in posted.values()] == [2, 2] and out.count("posts") == 4
    assert sorted(streamed_ids([w["path"] for w in out.warcs])) == sorted(posted["libraries"] + posted["archives"])
    assert tags == ["archives", "archives", "libraries", "libraries"]  # each reopened after its drop


def test_kill_9_then_resume_loses_nothing_and_exports_each_post_once(config, data_root, tmp_path):
    with FakeMastodon() as fake:
        fake.stream_scripts = [Script([("post", None)] * 3 + [("hold", None)]),
                               Script([("post", None)] * 2 + [("drop", None)])]
        before = {s["id"] for s in fake.tagged(TAG)}
        body = start_body("mastodon_stream", [{"id": "s-lib", "token": {"instance": fake.url, "hashtag": TAG}}],
                          credentials={}, harvest_id="mastodon:stream:9")
        message = tmp_path / "start.json"
        message.write_text(json.dumps(body))
        env = {**os.environ, "SWATH_DATA_ROOT": str(data_root), "SWATH_WARC_MAX_SECONDS": "0.3",
               "SWATH_STATUS_INTERVAL": "0.3", "SWATH_HTTP_BACKOFF": "0.05", "PYTHONPATH": str(ROOT),
               "SWATH_MASTODON_API_URL": fake.url}
        command = [sys.executable, "-m", "swath.harvesters.embedded", str(message)]

        first = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        first_three = [s["id"] for s in fake.tagged(TAG) if s["id"] not in before]

        def closed_warcs() -> list[str]:
            return [str(p) for p in data_root.rglob("*.warc.gz")]

        def committed() -> set[str]:  # a WARC's checkpoint is committed before the next WARC closes
            return set(streamed_ids(sorted(closed_warcs())[:-1]))

        try:  # killed once the three posts are in a WARC whose checkpoint is committed
            wait_until(lambda: fake.events_written >= 3 and len(committed()) >= 3,
                       "the first three posts in a committed WARC")
        finally:
            first.send_signal(signal.SIGKILL)
            first.wait(timeout=120)
        first.communicate(timeout=120)
        assert first.returncode == -signal.SIGKILL
        while_down = [fake.post(TAG, push=False)["id"] for _ in range(2)]

        second = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_until(lambda: fake.stream_connections >= 3, "the stream reopened after its drop")
        finally:
            second.send_signal(signal.SIGINT)  # the first SIGINT stops a stream cleanly
        out, err = second.communicate(timeout=120)
        posted = [s["id"] for s in fake.tagged(TAG) if s["id"] not in before]

    assert second.returncode == 0, err.decode()[-3000:]
    final = [json.loads(line)["message"] for line in out.splitlines()][-1]
    assert final["status"] == "completed success", final
    assert len(posted) == 7 and set(first_three) <= set(posted) and set(while_down) <= set(posted)
    cfg = dataclasses.replace(config, data_root=data_root)
    status, rows = export_rows(cfg, "mastodon_stream", dedupe=True)
    assert status["status"] == "completed success", status
    assert sorted(r["id"] for r in rows) == sorted(posted)  # nothing lost, each once


@pytest.mark.parametrize("harvest_type", TYPES)
def test_every_example_runs_against_the_configured_instance(config, harvest_type):
    with FakeMastodon(statuses_per_tag=20) as fake:
        cfg = config.with_api_url("mastodon", fake.url)
        body = example_start(harvest_type, cfg)
        stop = connected(fake, 1) if harvest_type == "mastodon_stream" else None
        out = run_harvest_job(cfg, body, stop_when=stop, stop_delay=0)
    assert out.status["status"] == "completed success", out.status
    assert all(isinstance(uid, str) for uid in out.status["uids"].values())
    assert out.warcs and (out.count("posts") > 0 or harvest_type in ("mastodon_search", "mastodon_stream"))


def test_hashtag_harvest_through_rabbitmq(config, broker):
    with FakeMastodon(statuses_per_tag=50) as fake:
        cfg = config.with_api_url("mastodon", fake.url)
        body = start_body("mastodon_hashtag", [{"id": "s", "token": "archives"}], credentials={},
                          path=str(cfg.data_root / "collections" / "cs1" / "c1"))
        with running_worker(cfg, "mastodon_harvester"), Publisher(config=cfg) as requester:
            requester.publish("harvest.start.mastodon.mastodon_hashtag", body).result(120)
            messages = until_final(broker, cfg.status_queue, timeout=120)
        expected = [s["id"] for s in fake.tagged("archives")]

    final = messages[-1][1]
    assert final["status"] == "completed success", final
    assert sum(day.get("posts", 0) for day in final["stats"].values()) == len(expected)
    warcs = [Path(b["warc"]["path"]) for k, b in messages if k == "warc_created"]
    assert warcs and warcio_check(warcs).returncode == 0
    status, rows = export_rows(cfg, "mastodon_hashtag", fmt="json")
    assert [r["id"] for r in rows] == expected


def test_stream_stops_through_rabbitmq(config, broker):
    with FakeMastodon(statuses_per_tag=20) as fake:
        cfg = config.with_api_url("mastodon", fake.url)
        fake.stream_scripts = [Script([("post", None)] * 3 + [("drop", None)])]
        body = start_body("mastodon_stream", [{"id": "s", "token": "#archives"}], credentials={},
                          path=str(cfg.data_root / "collections" / "cs1" / "c1"))
        with running_worker(cfg, "mastodon_harvester") as worker, Publisher(config=cfg) as requester:
            requester.publish("harvest.start.mastodon.mastodon_stream", body).result(120)
            wait_until(lambda: fake.stream_connections >= 2, "the stream reopened after its drop")
            requester.publish("harvest.stop.mastodon.mastodon_stream", {"id": body["id"]}).result(120)
            messages = until_final(broker, cfg.status_queue, timeout=120)
            assert broker.depth(worker.queue) == 0
        posted = fake.tagged("archives")[:3]

    final = messages[-1][1]
    assert final["status"] == "completed success", final
    assert sum(day.get("posts", 0) for day in final["stats"].values()) == 3
    warcs = [b["warc"]["path"] for k, b in messages if k == "warc_created"]
    assert sorted(streamed_ids(warcs)) == sorted(s["id"] for s in posted)


def test_three_reconnects_under_a_steady_publish_rate_lose_nothing_and_double_nothing(config):
    """The fake publishes on its own clock (every 5 ms, whether or not anyone listens) and takes 0.1 s to
    subscribe a new connection; the stream is dropped three times while it publishes. Every post published
    from the first subscription on is exported once."""
    with FakeMastodon(statuses_per_tag=20) as fake:
        fake.subscribe_delay = 0.1
        cfg = dataclasses.replace(config.with_api_url("mastodon", fake.url), http_backoff=0.05)
        body = start_body("mastodon_stream", [{"id": "s-lib", "token": f"#{TAG}"}], credentials={})
        stop, result = threading.Event(), []
        harvest = threading.Thread(target=lambda: result.append(run_harvest_job(cfg, body, stop_when=stop,
                                                                                stop_delay=0)))
        harvest.start()
        wait_until(lambda: fake.stream_connections >= 1, "the first subscription")  # the run's start
        with fake.publishing(TAG, every=0.005) as posted:
            for n in range(1, 5):  # on each connection a few posts stream, then (three times) it is dropped
                wait_until(lambda n=n: fake.stream_connections >= n, f"stream connection {n}")
                flowing = len(fake.streamed)
                wait_until(lambda f=flowing: len(fake.streamed) >= f + 5, f"posts on connection {n}")
                if n < 4:
                    fake.drop_streams()
        # the publisher has stopped; once the last post streamed, one more drop: the harvester's reconnect
        # says it read the connection to its end
        wait_until(lambda: posted[-1] in fake.streamed, "the last post streamed")
        fake.drop_streams()
        wait_until(lambda: fake.stream_connections >= 5, "the reconnect after the last post")
        stop.set()
        harvest.join(240)
        out = result[0]

    assert out.status["status"] == "completed success", out.status
    assert out.count("reconnects") == 4 and fake.stream_connections == 5  # three while publishing, one to end
    assert out.count("posts") == len(posted)  # each counted once; the stream's copies of backfilled posts apart
    status, rows = export_rows(cfg, "mastodon_stream", dedupe=True)
    assert status["status"] == "completed success", status
    exported = [r["id"] for r in rows]
    assert sorted(exported) == sorted(posted) and len(set(exported)) == len(exported)  # 0 lost, 0 doubled


def test_a_new_harvest_of_the_collection_backfills_from_its_cursor_unless_told_not_to(config):
    with FakeMastodon(statuses_per_tag=20) as fake:
        cfg = dataclasses.replace(config.with_api_url("mastodon", fake.url), http_backoff=0.05)
        fake.stream_scripts = [Script([("post", None)] * 3 + [("drop", None)])]
        seeds = [{"id": "s-lib", "token": f"#{TAG}"}]
        one = run_harvest_job(cfg, start_body("mastodon_stream", seeds, credentials={}, harvest_id="m:day1"),
                              stop_when=connected(fake, 2), stop_delay=0)
        day1 = fake.tagged(TAG)[:3]
        after_day1 = len(fake.server.requests_to(f"/api/v1/timelines/tag/{TAG}"))
        meanwhile = [fake.post(TAG, push=False)["id"] for _ in range(2)]  # while no harvest ran
        two = run_harvest_job(cfg, start_body("mastodon_stream", seeds, credentials={}, harvest_id="m:day2"),
                              stop_when=connected(fake, 3), stop_delay=0)
        asked = len(fake.server.requests_to(f"/api/v1/timelines/tag/{TAG}"))
        run_harvest_job(cfg, start_body("mastodon_stream", seeds, credentials={}, harvest_id="m:day3",
                                        options={"continue_cursor": False}),
                        stop_when=connected(fake, 4), stop_delay=0)
        backfills = fake.server.requests_to(f"/api/v1/timelines/tag/{TAG}")

    assert one.status["status"] == two.status["status"] == "completed success"
    day2 = backfills[after_day1:asked]
    assert day2 and {r.arg("since_id") for r in day2} == {day1[0]["id"]}  # day 2 from day 1's newest post
    assert two.count("posts") == len(meanwhile)  # neither re-read nor skipped
    assert len(backfills) == asked  # day 3, told not to continue, asked the timeline nothing


def test_a_delete_split_across_two_warc_records_is_a_deletion_in_the_export(config, data_root):
    with FakeMastodon(statuses_per_tag=20) as fake:
        cfg = dataclasses.replace(config.with_api_url("mastodon", fake.url), warc_max_seconds=0.3)
        fake.stream_scripts = [Script([("post", None), ("post", None), ("split_delete", None), ("drop", None)])]
        before = {s["id"] for s in fake.tagged(TAG)}

        def cut_after_event_line() -> bool:  # a closed WARC's stream record ends between the two lines
            bodies = [rec.content_stream().read() for path in data_root.rglob("*.warc.gz")
                      for rec in ArchiveIterator(path.open("rb"))
                      if rec.rec_type == "response" and "/streaming/" in rec.rec_headers.get_header("WARC-Target-URI")]
            return any(body.endswith(b"event: delete\n") for body in bodies)

        def split_then_stop() -> threading.Event:
            wait_until(cut_after_event_line, "a WARC record ending with the delete's event line")
            fake.split.set()
            return connected(fake, 2)

        stop = threading.Event()
        threading.Thread(target=lambda: (split_then_stop().wait(240), stop.set()), daemon=True).start()
        out = run_harvest_job(cfg, start_body("mastodon_stream", [{"id": "s", "token": f"#{TAG}"}], credentials={}),
                              stop_when=stop, stop_delay=0)
        posted = [s for s in fake.tagged(TAG) if s["id"] not in before]
        deleted = fake.deleted - before

    assert out.status["status"] == "completed success", out.status
    assert len(posted) == 1 and len(deleted) == 2  # one post left; the other deleted (and the fake's own)
    status, rows = export_rows(cfg, "mastodon_stream", dedupe=True)
    assert status["status"] == "completed success", status
    assert [r["id"] for r in rows] == [posted[0]["id"]]  # the deleted post's tombstone was recognised
