"""Several machines, no shared disk (issue 36; docs/deployment.md "Several machines, no shared disk" runs as
these tests do): worker "hosts" are `swath worker` processes, each with its OWN data root (its staging folder),
on the real RabbitMQ, with SWATH_STORAGE_URL=s3://... on a real SeaweedFS and claims and state in a fresh
PostgreSQL database (tests/objectstoragekit.py). Hosts harvest into the bucket together, one is killed mid-upload,
the volume server goes away, a RabbitMQ node is lost; what every test checks, from the bucket itself
(objectstoragekit.read_back): every item a fake served is in a stored object exactly once, every object announced
in warc_created is in the bucket with that size and SHA-1 (and nothing else is), each WARC id is announced with one
content only, and no WARC is left in a staging folder. A stale runner's writes: test_object_storage_fencing.py."""

from __future__ import annotations

import collections
import dataclasses
import json
import random
import threading
import time

import pytest

from swath.messages.broker import Publisher
from tests import cluster as clusters
from tests.fakes.httpserver import FakeServer
from tests.fakes.tumblr import FakeTumblr, build_blogs
from tests.objectstoragekit import (  # noqa: F401  (pg_url, site: fixtures)
    UPLOADING,
    WAIT,
    Site,
    claim_tokens,
    pg_url,
    read_back,
    site,
    stop_all,
    tumblr_start,
)
from tests.reliability.kit import Collector, ReliabilityApi, declare_queues
from tests.requesterkit import fresh_database
from tests.seaweed import Seaweed


def test_two_hosts_harvest_two_platforms_into_the_bucket_exactly_once(site, tmp_path):
    names = ("generic_harvester", "tumblr_harvester")
    blogs = build_blogs(counts={"blog0.example.org": 45, "blog1.example.org": 30}, seed=36)
    with FakeTumblr(blogs=blogs, page_delay=0.02) as tumblr, FakeServer() as server:
        site.config = dataclasses.replace(site.config.with_api_url("tumblr", tumblr.url), warc_max_bytes=6000)
        api = ReliabilityApi(server, pages=8, per_page=5, delay=0.02)
        declare_queues(site.config, names)
        workers = site.host(tmp_path, 0, names) + site.host(tmp_path, 1, names)
        starts = [api.start(f"s3a:pages:{n}:{tmp_path.name[-6:]}", collection_set="s3", collection=f"pages-{n}")
                  for n in range(4)]
        starts += [tumblr_start(host, f"s3a:tumblr:{n}:{tmp_path.name[-6:]}", n) for n, host in enumerate(blogs)]
        ids = [body["id"] for _, body in starts]
        try:
            with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got, \
                    Publisher(config=site.config) as requester:
                for worker in workers:
                    worker.start()
                assert got.wait(lambda: all(w.ready() for w in workers), WAIT), "workers attached"
                for key, body in starts:
                    requester.publish(key, body).result(120)
                assert got.wait(lambda: set(ids) <= set(got.finals()), WAIT), "every final status"
                got.drained()
                finals = got.finals()
                served_posts = [p["id_string"] for body in tumblr.bodies("/v2/blog/")
                                for p in json.loads(body)["response"]["posts"]]
        finally:
            exits = stop_all(workers)
    assert exits == [0] * len(workers), [w.log_text()[-3000:] for w in workers]
    for harvest_id in ids:
        assert [f["status"] for f in finals[harvest_id]] == ["completed success"], finals[harvest_id]
    found = read_back(site, tmp_path, got)
    served_pages = [i for key in api.served.items for i in api.served.items[key]]
    assert sorted(found["pages"]) == sorted(served_pages) and len(served_pages) == 4 * 8 * 5
    assert sorted(found["tumblr"]) == sorted(served_posts) and set(served_posts) == {
        p["id_string"] for blog in blogs.values() for p in blog.posts}
    assert all("uploading" in w.log_text() for w in workers if w.name == "generic_harvester" and
               w.config.data_root.joinpath("collections").exists())
    assert set(claim_tokens(site.db_url, ids).values()) == {1}  # each harvest claimed once, by one host
    print(f"(a) items served {len(served_pages)} pages + {len(served_posts)} posts; found in objects "
          f"{len(found['pages'])} + {len(found['tumblr'])}; objects verified {len(site.objects())}")


def test_kill_9_of_a_host_mid_upload_the_other_finishes_exactly_once(site, tmp_path):
    pages, per_page = 40, 5
    site.config = dataclasses.replace(site.config, warc_max_bytes=3000)
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=pages, per_page=per_page, delay=0.05)
        killed = threading.Event()

        def gated(request):  # past page 20 the fake waits for the kill: host 0 cannot finish before it
            if int(request.arg("page", "1")) > 20:
                killed.wait(WAIT)
            return api.page(request)

        server.route("/pages")(gated)
        declare_queues(site.config, ["generic_harvester"])
        first, second = site.host(tmp_path, 0, ("generic_harvester",)) + site.host(tmp_path, 1, ("generic_harvester",))
        harvest_id = f"s3b:{tmp_path.name[-6:]}"
        try:
            with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got, \
                    Publisher(config=site.config) as requester:
                first.start()
                assert got.wait(first.ready, WAIT), "host 0 attached"
                requester.publish(*api.start(harvest_id, collection_set="s3", collection="pages-0")).result(120)
                # the third upload has begun on host 0 (two WARCs before it are stored and committed)
                assert got.wait(lambda: first.log_text().count(UPLOADING) >= 3, WAIT), "host 0 uploading"
                second.start()
                assert got.wait(second.ready, WAIT), "host 1 attached"
                first.kill9()  # the broker hands the unacked start to host 1; PostgreSQL frees the claim
                killed.set()
                assert got.wait(lambda: harvest_id in got.finals(), WAIT), "final status after the kill"
                got.drained()
                finals = got.finals()[harvest_id]
        finally:
            killed.set()
            exits = stop_all([first, second])
    assert exits[1] == 0, second.log_text()[-4000:]
    assert [f["status"] for f in finals] == ["completed success"], finals
    assert "harvest_resumed" in [w["code"] for w in finals[0]["warnings"]]
    # host 0 died with what it was uploading in its own staging folder: not the other host's to see; the store's
    # committed serial makes its rerun (if ever) drop it. The checks below are about the store and host 1.
    for leftover in (tmp_path / "host0" / "data").rglob("*.warc*"):
        leftover.unlink()
    found = read_back(site, tmp_path, got)
    served = api.served.items[harvest_id]
    counts = collections.Counter(found["pages"])
    assert set(counts) == set(served) and len(served) >= pages * per_page, "an item served is in no object"
    assert set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1]
    assert claim_tokens(site.db_url, [harvest_id]) == {harvest_id: 2}  # host 0's run, then host 1's
    removed = [w["message"] for w in finals[0]["warnings"] if "uploaded by a run that ended" in w["message"]]
    print(f"(b) items served {len(served)} (unique {len(set(served))}); found in objects {len(found['pages'])}; "
          f"objects verified {len(site.objects())}; uncommitted objects of the killed host removed: {len(removed)}")


@pytest.mark.slow  # 30-100 s: with its volume server gone the gateway answers an upload only after ~30 s, 3 tries
@pytest.mark.timeout(1200)
def test_volume_server_lost_mid_harvest_keeps_the_warc_and_the_rerun_uploads_it_first(config, tmp_path):
    """One host (the fault is the store's): the volume server stops while the harvest runs, the upload fails after
    its retries (storage_unavailable, WARC kept in the staging folder), the volume comes back and the start,
    delivered again, uploads the kept WARC first and finishes."""
    pages, per_page = 20, 5
    weed = Seaweed.start(tmp_path / "weed")
    try:
        with fresh_database() as url, FakeServer() as server:
            site = Site(config=dataclasses.replace(config, warc_max_bytes=3000), seaweed=weed,
                        bucket=weed.new_bucket(), db_url=url)
            api = ReliabilityApi(server, pages=pages, per_page=per_page, delay=0.02)
            gate = threading.Event()

            def gated(request):  # past page 6 the fake waits until the volume server is down
                if int(request.arg("page", "1")) > 6:
                    gate.wait(WAIT)
                return api.page(request)

            server.route("/pages")(gated)
            declare_queues(site.config, ["generic_harvester"])
            (worker,) = site.host(tmp_path, 0, ("generic_harvester",), SWATH_HTTP_RETRIES="2",
                                  SWATH_HTTP_BACKOFF="0.2")
            harvest_id = f"s3c:{tmp_path.name[-6:]}"
            try:
                with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got, \
                        Publisher(config=site.config) as requester:
                    worker.start()
                    assert got.wait(worker.ready, WAIT), "worker attached"
                    start = api.start(harvest_id, collection_set="s3", collection="pages-0")
                    requester.publish(*start).result(120)
                    assert got.wait(lambda: len(got.warcs()) >= 1, WAIT), "a first WARC stored and announced"
                    weed.stop_volume()
                    gate.set()
                    assert got.wait(lambda: harvest_id in got.finals(), 3 * WAIT), "a status once the store failed"
                    first = got.finals()[harvest_id][0]
                    kept = list((tmp_path / "host0" / "data").rglob("*.warc.gz"))
                    weed.start_volume()
                    requester.publish(*start).result(120)  # the rerun
                    assert got.wait(lambda: len(got.finals()[harvest_id]) >= 2, WAIT), "the rerun's final status"
                    got.drained()
                    finals = got.finals()[harvest_id]
            finally:
                exit_code = worker.stop()
            assert exit_code == 0, worker.log_text()[-4000:]
            assert first["status"] == "completed failure", first
            assert [e["code"] for e in first["errors"]] == ["storage_unavailable"], first["errors"]
            assert kept, "the WARC that could not go up stayed in the staging folder"
            assert [f["status"] for f in finals] == ["completed failure", "completed success"], finals
            found = read_back(site, tmp_path, got)
            served = api.served.items[harvest_id]
            counts = collections.Counter(found["pages"])
            assert set(counts) == set(served) and set(counts.values()) == {1}
            assert len(found["pages"]) == pages * per_page
            print(f"(c) items served {len(served)} (unique {len(set(served))}); found in objects "
                  f"{len(found['pages'])}; objects verified {len(site.objects())}; kept locally over the outage "
                  f"{len(kept)} WARC(s)")
    finally:
        weed.stop()


@pytest.mark.reliability  # its own 3-node RabbitMQ cluster, as tests/test_cluster.py: 38 s here, more under load
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not clusters.available(), reason="Debian's rabbitmq-server is not installed")
def test_losing_the_rabbitmq_node_that_leads_the_harvest_queue_with_object_storage(site, tmp_path, swath_seed):
    """tests/test_cluster.py's node loss (harvests only: reading WARCs back from the bucket for exports is another
    branch's) with three harvester hosts, each its own data root, WARCs to the bucket, claims in PostgreSQL."""
    rng = random.Random(swath_seed)
    harvests = 6
    blogs = build_blogs(counts={f"blog{i}.example.org": rng.randrange(30, 80) for i in range(harvests)},
                        seed=swath_seed)
    nodes = clusters.Cluster(tmp_path / "cluster").start()
    try:
        with FakeTumblr(blogs=blogs, page_delay=0.3) as tumblr:
            site.config = dataclasses.replace(site.config.with_api_url("tumblr", tumblr.url),
                                              amqp_url=nodes.url_list(0), warc_max_seconds=1.0, http_retries=8,
                                              http_backoff=0.2, http_timeout=20.0)
            queue = site.config.queue_prefix + "tumblr_harvester"
            declare_queues(site.config, ["tumblr_harvester"])
            workers = []
            for n in range(3):  # each host starts with another node; every one knows all three
                (worker,) = site.host(tmp_path, n, ("tumblr_harvester",), SWATH_AMQP_URL=nodes.url_list(n))
                workers.append(worker)
            starts = [tumblr_start(host, f"s3d:{n}:{tmp_path.name[-6:]}", n) for n, host in enumerate(blogs)]
            ids = [body["id"] for _, body in starts]
            lost = None
            try:
                with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got:
                    for worker in workers:
                        worker.start()
                    assert got.wait(lambda: all(w.ready() for w in workers), WAIT), "hosts attached"
                    with Publisher(config=site.config) as requester:
                        for key, body in starts:
                            requester.publish(key, body).result(120)
                    deadline = time.monotonic() + 600
                    while time.monotonic() < deadline and not set(ids) <= set(got.finals()):
                        running = {b["id"] for b in got.statuses() if b["id"] in ids}
                        if lost is None and len(running) >= 3:  # each host busy, the rest wait: lose the leader
                            lost = nodes.leader(queue)
                            nodes.kill(lost)
                        time.sleep(0.2)
                    assert set(ids) <= set(got.finals()), [w.log_text()[-2000:] for w in workers]
                    got.drained()
                    finals = got.finals()
            finally:
                exits = stop_all(workers)
            served_posts = [p["id_string"] for body in tumblr.bodies("/v2/blog/")
                            for p in json.loads(body)["response"]["posts"]]
    finally:
        nodes.stop()
    assert lost is not None
    assert exits == [0, 0, 0], [w.log_text()[-3000:] for w in workers]
    for harvest_id in ids:  # ended exactly once (a redelivered, finished harvest repeats the same message)
        assert {f["status"] for f in finals[harvest_id]} == {"completed success"}, finals[harvest_id]
    found = read_back(site, tmp_path, got)
    counts = collections.Counter(found["tumblr"])
    every = {p["id_string"] for blog in blogs.values() for p in blog.posts}
    assert set(counts) == every and set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1]
    print(f"(d) lost {lost.name}; posts served {len(served_posts)} (unique {len(set(served_posts))}); found in "
          f"objects {len(found['tumblr'])}; objects verified {len(site.objects())}")
