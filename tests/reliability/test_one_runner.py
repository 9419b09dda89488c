"""One runner per harvest under chaos (issue: a dropped connection must never let two replicas run one
harvest): two tumblr_harvester replicas, WARCs rotating in every harvest, kill -9 of a replica and
server-side closes of both replicas' connections at seeded random moments (SWATH_TEST_SEED replays)."""

from __future__ import annotations

import dataclasses
import json
import random
import threading
import time
from pathlib import Path

import pytest

from swath.harvesters.warc import file_sha1
from swath.messages.broker import Publisher
from tests.brokerprobe import close_connections_named
from tests.fakes.tumblr import API_KEY, FakeTumblr, build_blogs
from tests.reliability.kit import FINAL, Collector, WorkerProcess, declare_queues, warc_responses, worker_env

pytestmark = pytest.mark.reliability
HARVESTS = 12
KILLS, CLOSES = 5, 3


class Chaos(threading.Thread):
    """kill -9 a replica (restarting it) or close both replicas' broker connections, in a seeded order."""

    def __init__(self, *, replicas: list[WorkerProcess], connection_prefix: str, rng: random.Random) -> None:
        super().__init__(daemon=True)
        self.replicas, self.prefix, self.rng = replicas, connection_prefix, rng
        self.actions = ["kill"] * KILLS + ["close"] * CLOSES
        rng.shuffle(self.actions)
        self.events: list[str] = []
        self.finish = threading.Event()

    def run(self) -> None:
        for action in self.actions:
            if self.finish.wait(self.rng.uniform(0.3, 1.2)):
                return
            for replica in self.replicas:  # act on replicas at work, not while they start
                while not replica.ready() and not self.finish.wait(0.05):
                    pass
            if action == "close":
                self.events.append(f"closed {close_connections_named(self.prefix)} connection(s)")
                continue
            replica = self.rng.choice(self.replicas)
            if replica.alive():
                replica.kill9()
                self.events.append(f"kill -9 {replica.log_path.parent.name}")
                time.sleep(self.rng.uniform(0.0, 0.5))
                replica.start()


def test_kills_and_dropped_connections_never_run_a_harvest_twice_or_lose_an_item(config, tmp_path, swath_seed):
    rng = random.Random(swath_seed)
    config = dataclasses.replace(config, warc_max_bytes=8000, http_retries=8, http_backoff=0.2, http_timeout=20.0)
    blogs = build_blogs(counts={f"one{i}.example.org": rng.randrange(150, 400) for i in range(HARVESTS)},
                        seed=swath_seed)
    hosts = sorted(blogs)
    with FakeTumblr(blogs=blogs, page_delay=0.12) as tumblr:
        config = config.with_api_url("tumblr", tumblr.url)
        declare_queues(config, ["tumblr_harvester"])
        replicas = []
        for n in range(2):
            (tmp_path / f"replica{n}").mkdir()
            replicas.append(WorkerProcess(config=config, name="tumblr_harvester", log_dir=tmp_path / f"replica{n}",
                                          env=worker_env(config)).start())
        starts = {f"one:{n}": {"id": f"one:{n}", "type": "tumblr_blog_posts", "path": f"collections/one/{n}",
                               "seeds": [{"id": "s1", "uid": host}], "credentials": {"api_key": API_KEY},
                               "collection_set": {"id": "one"}, "collection": {"id": str(n)}}
                  for n, host in enumerate(hosts)}
        chaos = Chaos(replicas=replicas, connection_prefix=config.queue_prefix + "tumblr_harvester", rng=rng)
        with Collector(config=config, queue=config.queue_prefix + "requester") as got:
            with Publisher(config=config) as requester:
                for body in starts.values():
                    requester.publish("harvest.start.tumblr.tumblr_blog_posts", body).result(120)
            chaos.start()
            chaos.join(200)  # every action is taken, also if the harvests end first
            ended = got.wait(lambda: set(starts) <= set(got.finals()), 240)
            chaos.finish.set()
            assert got.wait(lambda: all(r.ready() for r in replicas), 120), "replicas attached after the chaos"
            exits = [replica.stop() for replica in replicas]
            got.drained()
            received = got.snapshot()
    print(f"seed {swath_seed}; chaos: {chaos.events}")
    assert ended, f"harvests without a final status: {set(starts) - set(got.finals())}; chaos {chaos.events}"
    assert exits == [0, 0], [r.log_text()[-6000:] for r, code in zip(replicas, exits) if code != 0]
    finals: dict[str, list[dict]] = {}
    announced: dict[str, list[dict]] = {}
    for key, body in received:
        if ".status." in key and body["status"] in FINAL:
            finals.setdefault(body["id"], []).append(body)
        elif key == "warc_created":
            announced.setdefault(body["harvest"]["id"], []).append(body["warc"])
    for harvest_id, body in starts.items():
        ends = finals[harvest_id]
        assert all(end == ends[0] for end in ends), f"{harvest_id} ended in disagreeing ways: {ends}"
        assert ends[0]["status"] == "completed success", (harvest_id, ends[0]["errors"])
        host = body["seeds"][0]["uid"]
        served = {p["id_string"] for raw in tumblr.bodies(f"/v2/blog/{host}/")
                  for p in json.loads(raw)["response"]["posts"]}
        assert len(served) == len(blogs[host].posts)
        paths = {w["path"] for w in announced[harvest_id]}
        for warc in announced[harvest_id]:  # what was announced is what is on disk
            path = Path(warc["path"])
            assert (warc["bytes"], warc["sha1"]) == (path.stat().st_size, file_sha1(path)), warc
        in_warcs = {p["id_string"] for _, payload in warc_responses(sorted(map(Path, paths)))
                    for p in json.loads(payload)["response"]["posts"]}
        assert served <= in_warcs, f"{harvest_id}: served posts in no announced WARC: {sorted(served - in_warcs)}"
        counted = sum(day.get("posts", 0) for day in ends[0]["stats"].values())
        assert counted == len(served), f"{harvest_id}: stats count {counted} posts, {len(served)} were served"
    assert not list(config.data_root.rglob("*.open")), "a WARC was left open"
    assert sum(r.kills for r in replicas) >= 1 and any(e.startswith("closed") for e in chaos.events), chaos.events
