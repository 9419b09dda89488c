"""Bluesky through the real RabbitMQ: the bluesky_harvester and bluesky_exporter worker services, a fake XRPC
API and a fake Jetstream; and the harvester against hostile XRPC answers (no broker needed for those)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from swath.messages import codes
from swath.messages.broker import Publisher
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import wait_for, warcio_check
from tests.fakes.bluesky import APP_PASSWORD, IDENTIFIER, FakeBluesky, FakeJetstream
from tests.fakes.httpserver import Request, Response
from tests.fakes.social import run_harvest_job, start_body
from tests.test_bluesky_jetstream import recorded_events

ALICE = "did:plc:alice0000000000000000001"


def test_author_feed_and_jetstream_harvests_and_export_through_rabbitmq(config, broker):
    with FakeBluesky(require_auth=True) as fake, FakeJetstream() as jet:
        config = config.with_api_url("bluesky", fake.url)
        feed = start_body("bluesky_author_feed", [{"id": "alice", "token": "alice.example.com"}],
                          credentials={"identifier": IDENTIFIER, "app_password": APP_PASSWORD},
                          harvest_id="e2e:bluesky:feed", path="collections/set1/c1")
        stream = start_body("bluesky_jetstream", [], credentials={}, options={"jetstream_url": jet.url},
                            harvest_id="e2e:bluesky:jet", path="collections/set1/c1")
        events = jet.emit(12, did=ALICE)
        with running_worker(config, "bluesky_harvester"), Publisher(config=config) as requester:
            requester.publish("harvest.start.bluesky.bluesky_author_feed", feed).result(120)
            feed_messages = until_final(broker, config.status_queue)
            requester.publish("harvest.start.bluesky.bluesky_jetstream", stream).result(120)
            wait_for(lambda: len(jet.sent) == len(events), what="every event sent")
            requester.publish("harvest.stop.bluesky.bluesky_jetstream", {"id": stream["id"]}).result(120)
            stream_messages = until_final(broker, config.status_queue)
        entries = fake.author_entries(ALICE)

    final = feed_messages[-1][1]
    assert feed_messages[0][1]["status"] == "running" and final["status"] == "completed success", final
    assert sum(day.get("posts", 0) for day in final["stats"].values()) == len(entries)
    assert final["uids"] == {"alice": ALICE}
    stream_final = stream_messages[-1][1]
    assert stream_final["status"] == "completed success", stream_final
    stream_warcs = [Path(b["warc"]["path"]) for k, b in stream_messages if k == "warc_created"]
    assert warcio_check(stream_warcs).returncode == 0
    recorded = recorded_events(stream_warcs)
    assert recorded  # the stop came after every event was sent; those read before it are kept
    assert sum(day.get("events", 0) for day in stream_final["stats"].values()) == len(recorded)
    assert [e["time_us"] for e in recorded] == [e["time_us"] for e in events][:len(recorded)]

    export = {"id": "e2e:bluesky:export", "type": "bluesky_author_feed", "collection": {"id": "c1"},
              "path": "exports/bsky", "format": "csv", "dedupe": True, "segment_size": None}
    with running_worker(config, "bluesky_exporter"), Publisher(config=config) as requester:
        requester.publish("export.start.bluesky.bluesky_author_feed", export).result(120)
        statuses = until_final(broker, config.status_queue)
    assert statuses[-1][1]["status"] == "completed success", statuses[-1][1]
    files = sorted((config.data_root / "exports" / "bsky").glob("*.csv"))
    with files[0].open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    # the collection holds both harvests: the author feed's entries and the Jetstream's posts, each once
    wanted = {e["reason"]["uri"] if "reason" in e else e["post"]["uri"] for e in entries} | \
        {f"at://{ALICE}/app.bsky.feed.post/{e['commit']['rkey']}" for e in recorded}
    assert sorted(r["id"] for r in rows) == sorted(wanted)


def _hostile(fake: FakeBluesky, answer) -> None:
    fake.server.routes[("GET", "/xrpc/app.bsky.feed.searchPosts")] = answer


def test_hostile_search_answers_end_the_seed_with_a_code(config):
    with FakeBluesky() as fake:
        cfg = config.with_api_url("bluesky", fake.url)

        def run() -> dict:
            out = run_harvest_job(cfg, start_body("bluesky_search", [{"id": "s", "token": "archive"}], credentials={}))
            return out.status

        _hostile(fake, lambda req: Response(200, b"[1, 2, 3]"))  # JSON, but not an object
        assert [n["code"] for n in run()["errors"]] == [codes.BAD_RESPONSE]
        _hostile(fake, lambda req: Response(200, json.dumps({"posts": [{"text": "no uri"}]}).encode()))
        assert [n["code"] for n in run()["errors"]] == [codes.BAD_RESPONSE]

        def looping(req: Request) -> Response:  # the same cursor for ever, a new post each page
            n = len(fake.server.requests_to("/xrpc/app.bsky.feed.searchPosts"))
            return Response(200, json.dumps({"cursor": "same", "posts": [{"uri": f"at://did:plc:x/p/{n}"}]}).encode())

        _hostile(fake, looping)
        status = run()
        assert [n["code"] for n in status["errors"]] == [codes.PAGINATION_LOOP]
        assert status["errors"][0]["seed_id"] == "s"
