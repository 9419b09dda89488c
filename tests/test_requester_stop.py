"""`swath harvest stop` reaches whichever replica holds the stream (two replicas of one worker, one queue)."""

from __future__ import annotations

from swath.core.config import Config
from swath.messages.worker import Worker, wait_for
from swath.monitor import monitor_worker
from swath.store import Store, repo
from tests.enginekit import StreamApi
from tests.fakes.httpserver import FakeServer
from tests.requesterkit import running, spec_named, swath


def test_stop_reaches_the_replica_running_the_stream(config: Config, broker) -> None:
    store = Store(url=config.db_url)
    server = FakeServer()
    StreamApi(server, path="/stream", every=0.01)
    replicas = [Worker(config=config, spec=spec_named("generic_harvester")) for _ in range(2)]
    with server, running(monitor_worker(config=config, store=store)), running(replicas[0]), running(replicas[1]):
        swath(config, "harvest", "create", "firehose", "--type", "generic_stream", "--seed", f"{server.url}/stream")
        swath(config, "harvest", "validate", "firehose")
        job = swath(config, "harvest", "launch", "firehose", "--json")

        def status() -> str:
            with store.session() as s:
                return repo.get_job(s, job["id"]).status

        # the first running status reached the monitor
        assert wait_for(lambda: status() == "running", 120), f"the job is {status()!r}, not running"
        busy = swath(config, "harvest", "launch", "firehose", "--json", expect=1)
        assert busy["error"]["code"] == "source_busy"  # no second run of a source while one streams
        swath(config, "harvest", "stop", "firehose")
        assert wait_for(lambda: status().startswith("completed"), 120), f"the stopped job is {status()!r}"
        assert wait_for(lambda: sum(w.processed for w in replicas) == 1, 120), "no replica counted the stream processed"
    (listed,) = swath(config, "harvest", "jobs", "firehose", "--json")
    assert listed["status"] == "completed success" and listed["stop_requested_at"]
    assert listed["totals"]["items"] > 0 and listed["warcs"]["count"] >= 1
    assert server.requests and len(server.requests) == 1  # one replica ran it, once
    store.close()
