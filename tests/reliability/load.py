"""Drain a burst of harvest.start messages with N replicas of each harvester (used by bench/bench_load.py
and, small, by test_load.py): every start queued before any worker runs, then the clock starts."""

from __future__ import annotations

import dataclasses
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from swath.core.config import Config
from swath.messages.broker import Publisher
from tests.fakes.httpserver import FakeServer
from tests.fakes.tumblr import API_KEY, FakeTumblr, build_blogs
from tests.reliability.kit import GENERIC_SECRET, Collector, ReliabilityApi, WorkerProcess, declare_queues, worker_env

HARVESTERS = ("generic_harvester", "tumblr_harvester")


@dataclass
class Drained:
    messages: int
    replicas: int
    seconds: float  # from the first worker start to the last final status
    finals: dict[str, list[dict]]
    peak_rss_kib: dict[str, int]  # per worker process (VmHWM), largest replica
    monitor_seconds: float  # until the monitor had recorded every status (its queue empty)

    @property
    def per_minute(self) -> float:
        return self.messages / self.seconds * 60


def peak_rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def starts(n: int, api: ReliabilityApi, hosts: list[str]) -> list[tuple[str, dict]]:
    out = []
    for i in range(n):
        if i % 2:
            host = hosts[i % len(hosts)]
            out.append(("harvest.start.tumblr.tumblr_blog_posts", {
                "id": f"load:{i}", "type": "tumblr_blog_posts", "path": f"load/t{i % 10}",
                "seeds": [{"id": "s", "uid": host}], "credentials": {"api_key": API_KEY},
                "collection_set": {"id": "load"}, "collection": {"id": f"t{i % 10}"}}))
        else:
            out.append(("harvest.start.generic.generic_pages", {
                "id": f"load:{i}", "type": "generic_pages", "path": f"load/g{i % 10}",
                "seeds": [{"id": "s", "token": api.page_url(f"g{i}")}], "credentials": {"api_key": GENERIC_SECRET},
                "collection_set": {"id": "load"}, "collection": {"id": f"g{i % 10}"}}))
    return out


def drain(*, config: Config, messages: int, replicas: int, workdir: Path, timeout: float = 1800) -> Drained:
    """Queue `messages` starts (half generic_pages of 2 pages, half Tumblr blogs of 1-2 pages), then run
    `replicas` of each harvester plus one monitor until every harvest has a final status."""
    tag = f"load_{uuid.uuid4().hex[:8]}"
    config = dataclasses.replace(config, exchange=tag, dead_letter_exchange=f"{tag}_dlx",
                                 dead_letter_queue=f"{tag}_dead", status_queue=f"{tag}_status",
                                 queue_prefix=f"{tag}_", data_root=workdir / "load-data",
                                 db_url=f"sqlite:///{workdir / 'swath.sqlite'}", status_interval=30.0)
    config.data_root.mkdir(parents=True, exist_ok=True)
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    blogs = build_blogs(counts={f"b{i}.example.org": 15 + 5 * i for i in range(4)})
    with FakeTumblr(blogs=blogs) as tumblr, FakeServer() as server:
        config = config.with_api_url("tumblr", tumblr.url)
        api = ReliabilityApi(server, pages=2, per_page=5, delay=0.0)
        declare_queues(config, HARVESTERS)
        bodies = starts(messages, api, list(blogs))
        with Collector(config=config, queue=f"{tag}_requester") as got:
            with Publisher(config=config) as requester:
                for future in [requester.publish(key, body) for key, body in bodies]:
                    future.result(60)
            env = worker_env(config)
            workers = [WorkerProcess(config=config, name=name, log_dir=logs, env=env) for name in HARVESTERS
                       for _ in range(replicas)]
            # each replica logs to its own file
            for n, worker in enumerate(workers):
                worker.log_path = logs / f"{worker.name}-{n}.log"
            monitor = WorkerProcess(config=config, name="monitor", log_dir=logs, env=env)
            began = time.monotonic()
            for worker in (*workers, monitor):
                worker.start()
            ids = {body["id"] for _, body in bodies}
            done = got.wait(lambda: len(ids & set(got.finals())) == len(ids), timeout)
            seconds = time.monotonic() - began
            from tests.brokerprobe import BrokerProbe

            probe = BrokerProbe(config)
            got.wait(lambda: probe.depth(config.status_queue) == 0, 120)
            monitor_seconds = time.monotonic() - began
            probe.close()
            rss: dict[str, int] = {}
            for worker in (*workers, monitor):
                rss[worker.name] = max(rss.get(worker.name, 0), peak_rss_kib(worker.proc.pid))
                worker.stop()
            finals = got.finals()
        from tests.brokerprobe import delete_test_entities

        delete_test_entities(tag)
    if not done:
        raise AssertionError(f"{len(ids - set(finals))} harvest(s) had no final status after {timeout}s")
    return Drained(messages=messages, replicas=replicas, seconds=seconds, finals=finals, peak_rss_kib=rss,
                   monitor_seconds=monitor_seconds)
