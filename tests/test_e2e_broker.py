"""Whole flows through the real RabbitMQ: the worker services from swath.services, real HTTP fakes,
real WARCs, real exports. A stand-in requester publishes with confirms and reads the status queue."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from swath.messages.broker import Publisher
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import StreamApi, warcio_check
from tests.fakes.httpserver import FakeServer
from tests.fakes.tumblr import API_KEY, FakeTumblr
from tests.generated import generate_tweets


def response_payloads(paths: list[Path]) -> list[bytes]:
    payloads = []
    for path in paths:
        with path.open("rb") as fh:
            for record in ArchiveIterator(fh):
                if record.rec_type == "response":
                    payloads.append(record.content_stream().read())
    return payloads


def test_tumblr_harvest_and_export_through_rabbitmq(config, broker):
    host = "gwulibraries.tumblr.com"
    with FakeTumblr() as fake:
        config = config.with_api_url("tumblr", fake.url)
        harvest = {
            "id": "e2e:tumblr:1", "type": "tumblr_blog_posts", "path": "collections/set1/coll1",
            "seeds": [{"id": "seed-gwu", "uid": "gwulibraries"}],
            "credentials": {"api_key": API_KEY},
            "collection_set": {"id": "set1"}, "collection": {"id": "coll1"},
        }
        with running_worker(config, "tumblr_harvester"), Publisher(config=config) as requester:
            requester.publish("harvest.start.tumblr.tumblr_blog_posts", harvest).result(120)
            messages = until_final(broker, config.status_queue)
        served_posts = fake.expected_posts(host)
        served_bodies = fake.bodies(f"/v2/blog/{host}/posts")

    keys = [key for key, _ in messages]
    assert keys[0] == "harvest.status.tumblr.tumblr_blog_posts" and messages[0][1]["status"] == "running"
    assert keys[-1] == "harvest.status.tumblr.tumblr_blog_posts"
    final = messages[-1][1]
    assert final["status"] == "completed success", final
    assert sum(day.get("posts", 0) for day in final["stats"].values()) == len(served_posts)
    warcs = [body["warc"] for key, body in messages if key == "warc_created"]
    assert warcs and keys.index("warc_created") < len(keys) - 1  # warc_created before the final status
    paths = [Path(w["path"]) for w in warcs]
    for warc, path in zip(warcs, paths):
        assert path.is_relative_to(config.data_root.resolve())
        assert hashlib.sha1(path.read_bytes()).hexdigest() == warc["sha1"]
        assert path.stat().st_size == warc["bytes"]
    assert final["warcs"] == {"count": len(paths), "bytes": sum(p.stat().st_size for p in paths)}
    assert warcio_check(paths).returncode == 0
    assert response_payloads(paths) == served_bodies  # byte-exact replay of what the server sent
    assert all(API_KEY.encode() not in p.read_bytes() for p in paths)

    export = {"id": "e2e:export:1", "type": "tumblr_blog_posts", "collection": {"id": "coll1"},
              "path": "exports/e2e-1", "format": "csv", "dedupe": True, "segment_size": None}
    with running_worker(config, "tumblr_exporter"), Publisher(config=config) as requester:
        requester.publish("export.start.tumblr.tumblr_blog_posts", export).result(120)
        statuses = until_final(broker, config.status_queue)
    assert statuses[0][1]["status"] == "running"
    assert statuses[-1][0] == "export.status.tumblr.tumblr_blog_posts"
    assert statuses[-1][1]["status"] == "completed success", statuses[-1][1]
    files = sorted((config.data_root / "exports" / "e2e-1").glob("*.csv"))
    assert len(files) == 1
    with files[0].open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    warc_ids = [post["id_string"] for body in response_payloads(paths)
                for post in json.loads(body)["response"]["posts"]]
    assert sorted(row["tumblr_id"] for row in rows) == sorted(warc_ids)


def test_export_in_reader_processes_through_rabbitmq(config, broker):
    """A worker (pika threads and all) exporting with reader processes forked from its fork server writes
    the bytes an in-process export writes."""
    from swath.core.jobs import JobContext
    from swath.exporters.base import run_export

    info = generate_tweets(config.data_root / "collections" / "s" / "gen", tweets=2000, warc_pages=5)
    export = {"id": "e2e:export:procs", "type": "twitter_search_2", "collection": {"id": "gen"},
              "path": "exports/procs", "format": "csv", "dedupe": True, "segment_size": 700}
    worker_config = dataclasses.replace(config, export_workers=2)
    with running_worker(worker_config, "twitter_exporter"), Publisher(config=config) as requester:
        requester.publish("export.start.twitter.twitter_search_2", export).result(120)
        statuses = until_final(broker, config.status_queue, timeout=120)
    assert statuses[-1][1]["status"] == "completed success", statuses[-1][1]
    assert statuses[-1][1]["items"] == info["unique"]

    statuses_here: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses_here.append(body), service="test")
    run_export({**export, "id": "here", "path": "exports/here"}, routing_key="export.start.twitter.twitter_search_2",
               ctx=ctx, workers=1)
    assert statuses_here[-1]["status"] == "completed success"
    procs = sorted((config.data_root / "exports" / "procs").glob("*.csv"))
    here = sorted((config.data_root / "exports" / "here").glob("*.csv"))
    assert len(procs) == len(here) == -(-info["unique"] // 700)  # ceil: segments of 700
    assert [p.read_bytes() for p in procs] == [p.read_bytes() for p in here]


def test_stream_harvest_stops_through_rabbitmq(config, broker):
    config = dataclasses.replace(config, warc_max_seconds=0.5, status_interval=0.3)
    with FakeServer() as server:
        StreamApi(server)
        start = {"id": "e2e:stream:1", "type": "generic_stream", "path": "collections/s/stream1",
                 "seeds": [{"id": "seed-1", "token": server.url + "/stream"}],
                 "collection_set": {"id": "s"}, "collection": {"id": "stream1"}}
        with running_worker(config, "generic_harvester") as worker, Publisher(config=config) as requester:
            requester.publish("harvest.start.generic.generic_stream", start).result(120)
            received: list[tuple[str, dict]] = []
            while sum(1 for key, _ in received if key == "warc_created") < 2:
                method, _h, body = broker.get(config.status_queue, timeout=120)
                received.append((method.routing_key, body))
            assert all(body["status"] == "running" for key, body in received if key != "warc_created")
            requester.publish("harvest.stop.generic.generic_stream", {"id": "e2e:stream:1"}).result(120)
            received += until_final(broker, config.status_queue)
            assert broker.depth(worker.queue) == 0

    final = received[-1][1]
    assert final["status"] == "completed success", final
    warcs = [Path(body["warc"]["path"]) for key, body in received if key == "warc_created"]
    assert received[-2][0] == "warc_created"  # the final WARC is reported before the final status
    assert final["warcs"]["count"] == len(warcs) >= 3
    assert warcio_check(warcs).returncode == 0
    lines = [line for body in response_payloads(warcs) for line in body.splitlines() if line.strip()]
    assert sum(day["items"] for day in final["stats"].values()) == len(lines)


@pytest.mark.parametrize("body", [
    {"id": "e2e:bad:1", "type": "tumblr_blog_posts", "path": "../../etc", "collection_set": {"id": "s"},
     "collection": {"id": "c"}, "seeds": [{"id": "x", "uid": "gwulibraries"}], "credentials": {"api_key": "k"}},
])
def test_path_outside_data_root_is_refused_through_rabbitmq(config, broker, body):
    with running_worker(config, "tumblr_harvester"), Publisher(config=config) as requester:
        requester.publish("harvest.start.tumblr.tumblr_blog_posts", body).result(120)
        final = until_final(broker, config.status_queue)[-1][1]
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == ["path_outside_data_root"]
    assert not any(config.data_root.rglob("*.warc.gz"))


def test_a_stop_heard_while_no_worker_runs_the_stream_still_stops_it(config, broker):
    from swath.core.stops import stop_recorded
    from swath.messages.worker import wait_for
    from tests.dummyjob import dummy_spec

    config = dataclasses.replace(config, status_interval=0.3)
    with FakeServer() as server:
        stream = StreamApi(server)
        start = {"id": "e2e:stream:between", "type": "generic_stream", "path": "collections/s/between",
                 "seeds": [{"id": "seed-1", "token": server.url + "/stream"}],
                 "collection_set": {"id": "s"}, "collection": {"id": "between"}}
        # a replica that hears generic stops but runs nothing: the stream is "between workers"
        idle_replica = dummy_spec(name="idle_replica", bindings=["idle.start.#"],
                                  stop_bindings=["harvest.stop.generic.*"])
        broker.queue(config.queue_prefix + "generic_harvester", ["harvest.start.generic.*"])
        with running_worker(config, idle_replica), Publisher(config=config) as requester:
            requester.publish("harvest.start.generic.generic_stream", start).result(120)
            requester.publish("harvest.stop.generic.generic_stream", {"id": start["id"]}).result(120)
            assert wait_for(lambda: stop_recorded(config.data_root, start["id"]), 120), "the stop was never recorded"
        with running_worker(config, "generic_harvester"):
            received = until_final(broker, config.status_queue)
    final = received[-1][1]
    assert final["status"] == "completed success", final
    assert stream.connections == 1  # it opened the stream once, then stopped instead of running on
    warcs = [Path(body["warc"]["path"]) for key, body in received if key == "warc_created"]
    assert warcs and warcio_check(warcs).returncode == 0
    lines = [line for body in response_payloads(warcs) for line in body.splitlines() if line.strip()]
    assert sum(day["items"] for day in final["stats"].values()) == len(lines)
