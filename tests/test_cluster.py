"""Past one machine: a 3-node RabbitMQ cluster of the test's own (tests/cluster.py), quorum queues, workers
spread over the nodes with SWATH_AMQP_URL naming all three. A burst of Tumblr harvests and exports runs;
once every harvester is at work, the node leading the harvest queue is kill -9'ed; every harvest ends exactly
once with its posts in complete WARCs, every export holds its blog's posts, the monitor recorded every status
and WARC, and nothing is left in any queue. Then the lost node is started again and rejoins: the cluster runs
it and the queues count it online. The system RabbitMQ on 5672 is not touched."""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swath.core.config import Config
from swath.messages.broker import Publisher
from swath.messages.worker import wait_for
from swath.store import Store, repo
from tests import cluster as clusters
from tests.fakes.tumblr import API_KEY, FakeTumblr, build_blogs
from tests.reliability.kit import (
    FINAL,
    Collector,
    WorkerProcess,
    declare_queues,
    items_in_warcs,
    warcio_check,
    worker_env,
)

pytestmark = [pytest.mark.reliability,
              pytest.mark.skipif(not clusters.available(), reason="Debian's rabbitmq-server is not installed")]

HARVESTS = 9  # one blog each; three harvester workers take them one at a time, so some wait in the queue
HARVEST_KEY, EXPORT_KEY = "harvest.start.tumblr.tumblr_blog_posts", "export.start.tumblr.tumblr_blog_posts"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[clusters.Cluster]:
    began = time.monotonic()
    nodes = clusters.Cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield nodes.start()
    finally:
        nodes.stop()
        print(f"cluster fixture: {time.monotonic() - began:.0f}s with the tests")


def on_cluster(config: Config, cluster: clusters.Cluster, first: int = 0) -> Config:
    return dataclasses.replace(config, amqp_url=cluster.url_list(first))


@pytest.mark.services  # its own 3-node cluster: 35 s on an idle 2-core machine, 80-100 s under load
@pytest.mark.timeout(1200)
def test_a_burst_survives_losing_the_node_that_leads_the_work_queue(cluster: clusters.Cluster, config: Config,
                                                                    tmp_path: Path, swath_seed: int) -> None:
    rng = random.Random(swath_seed)
    config = dataclasses.replace(on_cluster(config, cluster), warc_max_seconds=1.0, http_retries=8,
                                 http_backoff=0.2, http_timeout=20.0)
    logs = tmp_path / "logs"
    logs.mkdir()
    blogs = build_blogs(counts={f"blog{i}.example.org": rng.randrange(30, 90) for i in range(HARVESTS)},
                        seed=swath_seed)
    harvest_queue = config.queue_prefix + "tumblr_harvester"
    with FakeTumblr(blogs=blogs, page_delay=0.3) as tumblr:
        config = config.with_api_url("tumblr", tumblr.url)
        declare_queues(config, ["tumblr_harvester", "tumblr_exporter"])
        # each worker starts with another node; every one knows all three to fail over to
        names = ["tumblr_harvester"] * 3 + ["tumblr_exporter"] * 2 + ["monitor"]
        workers = [WorkerProcess(config=config, name=name, log_dir=logs / f"{n}",
                                 env=worker_env(on_cluster(config, cluster, first=n % 3)))
                   for n, name in enumerate(names)]
        lost = None
        with contextlib.ExitStack() as stack, Collector(config=config, queue=config.queue_prefix + "requester") as got:
            for n, worker in enumerate(workers):
                (logs / f"{n}").mkdir()
                stack.callback(lambda w=worker: w.stop() if w.alive() else None)  # also when the test fails
                worker.start()
            # a requester on each node: the one on the lost node fails over, sending its unconfirmed messages again
            requesters = [stack.enter_context(Publisher(config=on_cluster(config, cluster, first=n))) for n in range(3)]
            assert wait_for(lambda: all(w.ready() for w in workers), 240), _logs(workers)
            for n, host in enumerate(blogs):
                requesters[n % 3].publish(HARVEST_KEY, harvest(n, host)).result(120)
            exported: set[str] = set()
            deadline = time.monotonic() + 600
            while time.monotonic() < deadline:
                finals = {hid for hid in got.finals() if hid.startswith("cluster:")}
                running = {b["id"] for b in got.statuses() if b["id"].startswith("cluster:")}
                if lost is None and len(running) >= 3:  # each harvester is busy, the rest wait: lose the leader
                    lost = cluster.leader(harvest_queue)
                    cluster.kill(lost)
                    print(f"killed {lost.name}, leader of {harvest_queue}, with {len(running - finals)} harvest(s) "
                          f"running and {len(finals)} done")
                for hid in sorted(finals - exported):  # export each harvest's collection once it is done
                    requesters[len(exported) % 3].publish(EXPORT_KEY, export(hid)).result(180)
                    exported.add(hid)
                export_finals = {e for e in got.finals() if e.startswith("export-")}
                if len(export_finals) == HARVESTS:
                    break
                time.sleep(0.2)
            assert lost is not None
            assert len({e for e in got.finals() if e.startswith("export-")}) == HARVESTS, _logs(workers)
            assert wait_for(lambda: recorded(config) == 2 * HARVESTS, 240), _logs(workers)  # before it stops
            exits = [worker.stop() for worker in workers]
            got.drained()
            received = got.snapshot()
            served = {host: {p["id_string"] for p in blog.posts} for host, blog in blogs.items()}
    assert exits == [0] * len(workers), _logs(workers)
    # the workers that began on the lost node went on through another one: they attached to their queue again
    moved = [w for n, w in enumerate(workers) if n % 3 == cluster.nodes.index(lost)]
    assert moved and all(w.log_text().count(" consuming ") >= 2 for w in moved), _logs(moved)

    finals: dict[str, list[dict]] = {}
    for key, body in received:
        if ".status." in key and body["status"] in FINAL:
            finals.setdefault(body["id"], []).append(body)
    harvest_ids = [f"cluster:harvest:{n}" for n in range(HARVESTS)]
    # ended exactly once: one outcome per harvest (a redelivered, finished harvest repeats the same message)
    assert sorted(h for h in finals if h.startswith("cluster:")) == sorted(harvest_ids)
    assert all(all(f == fs[0] for f in fs) for fs in finals.values()), finals
    assert {h: finals[h][0]["status"] for h in harvest_ids} == {h: "completed success" for h in harvest_ids}
    resumed = [h for h in harvest_ids if any(w["code"] == "harvest_resumed" for w in finals[h][0]["warnings"])]
    print(f"lost {lost.name}; {len(resumed)} harvest(s) resumed on another worker: {resumed}")

    root = config.data_root
    on_disk = sorted(root.rglob("*.warc.gz"))
    assert on_disk and not list(root.rglob("*.open"))
    check = warcio_check(on_disk)
    assert check.returncode == 0, check.stdout + check.stderr
    found = items_in_warcs(on_disk)["tumblr"]
    assert set(found) == set().union(*served.values())  # every post served is in a complete WARC
    for n, host in enumerate(blogs):  # and each export holds exactly its blog's posts
        rows = []
        for path in sorted((root / "exports" / f"e{n}").glob("*.csv")):
            with path.open(newline="", encoding="utf-8") as fh:
                rows += [row["tumblr_id"] for row in csv.DictReader(fh)]
        assert finals[f"export-{n}"][0]["status"] == "completed success", finals[f"export-{n}"]
        assert sorted(rows) == sorted(served[host]), host

    store = Store(url=config.db_url)  # the monitor recorded every final status and every WARC
    try:
        with store.session() as s:
            jobs = {job.id: job.status for job in repo.list_jobs(s, limit=10_000)}
            exports = {e.id: e.status for e in repo.list_exports(s, limit=10_000)}
            stored_warcs = {w.path for w in repo.warcs_for_collection(s)}
    finally:
        store.close()
    assert {h: jobs.get(h) for h in harvest_ids} == {h: "completed success" for h in harvest_ids}
    assert exports == {f"export-{n}": "completed success" for n in range(HARVESTS)}
    assert stored_warcs == {str(p) for p in on_disk}

    # nothing left in any queue of this test (asked of a node that is up)
    left = {q["name"]: q["messages"] for q in cluster.queues()
            if q["name"].startswith(config.exchange) and q["messages"]}
    assert not left, left


@pytest.mark.services
@pytest.mark.timeout(600)
def test_the_lost_node_rejoins_when_started_again(cluster: clusters.Cluster, config: Config) -> None:
    config = on_cluster(config, cluster)
    declare_queues(config, ["tumblr_harvester"])
    queue = config.queue_prefix + "tumblr_harvester"
    stopped = [node for node in cluster.nodes if not node.alive()]
    if not stopped:  # the burst above did not get to lose a node: lose one here
        stopped = [cluster.leader(queue)]
        cluster.kill(stopped[0])
    node = stopped[0]
    assert node.name not in cluster.running_nodes()
    cluster.restart(node)
    every = sorted(n.name for n in cluster.nodes)
    assert wait_for(lambda: cluster.running_nodes() == every, 240), cluster.running_nodes()
    row = lambda: next(q for q in cluster.queues() if q["name"] == queue)  # noqa: E731
    assert wait_for(lambda: sorted(row()["online"]) == every, 240), row()
    # and the rejoined node serves: a message published through it is there for a consumer on another node
    with Publisher(config=on_cluster(config, cluster, first=cluster.nodes.index(node))) as publisher:
        publisher.publish(HARVEST_KEY, harvest(99, "rejoined.example.org")).result(120)
    assert wait_for(lambda: row()["messages"] == 1, 120), row()


def recorded(config: Config) -> int:
    """Harvests and exports the monitor has recorded as ended."""
    store = Store(url=config.db_url)
    try:
        with store.session() as s:
            ended = [job.status for job in repo.list_jobs(s, limit=10_000)]
            ended += [e.status for e in repo.list_exports(s, limit=10_000)]
    finally:
        store.close()
    return sum(status in FINAL for status in ended)


def harvest(n: int, host: str) -> dict:
    return {"id": f"cluster:harvest:{n}", "type": "tumblr_blog_posts", "path": f"collections/cs/blog{n}",
            "seeds": [{"id": f"seed-{host}", "uid": host}], "credentials": {"api_key": API_KEY},
            "collection_set": {"id": "cs"}, "collection": {"id": f"blog{n}"}}


def export(harvest_id: str) -> dict:
    n = harvest_id.rsplit(":", 1)[1]
    return {"id": f"export-{n}", "type": "tumblr_blog_posts", "collection": {"id": f"blog{n}"},
            "path": f"exports/e{n}", "format": "csv", "dedupe": True, "segment_size": None}


def _logs(workers: list[WorkerProcess]) -> str:
    return "\n".join(f"--- {w.name} ---\n{w.log_text()[-2000:]}" for w in workers)
