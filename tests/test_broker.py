"""The RabbitMQ runtime against the real broker on this machine: confirms, returns, ack-after-work,
redelivery after kill -9, dead-lettering, reconnect after a server-side close, clean SIGTERM."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from swath.core.jobs import JobInterrupted
from swath.messages.broker import DEAD_REASON_CODE, DEAD_ROUTING_KEY, Publisher, Unroutable
from swath.messages.worker import wait_for
from tests.brokerprobe import close_connections_named, running_worker
from tests.dummyjob import dummy_spec

ROOT = Path(__file__).resolve().parents[1]


def start_message(harvest_id: str, **options) -> dict:
    return {"id": harvest_id, "type": "dummy", "path": "c1", "options": options,
            "collection_set": {"id": "cs"}, "collection": {"id": "c1"}}


@pytest.fixture
def worker(config, broker):
    """A dummy worker running in a thread of this process."""
    with running_worker(config, dummy_spec()) as w:
        yield w


def test_warm_up_runs_once_before_the_first_message(config, broker):
    calls: list[bool] = []
    spec = dummy_spec(warm_up=lambda cfg: calls.append(cfg is config and not done_ids(config)))
    with running_worker(config, spec), Publisher(config=config) as publisher:
        status = broker.queue(config.queue_prefix + "warm-status", ["harvest.status.dummy.#"])
        publisher.publish("harvest.start.dummy.dummy", start_message("w1")).result(timeout=120)
        broker.get(status, timeout=120)
    assert calls == [True]


def test_export_workers_start_their_reader_processes_at_start_up():
    from swath.exporters.reader import start_processes
    from swath.services import exporter_services

    assert {spec.warm_up is not None for spec in exporter_services().values()} == {True}
    start_processes()
    import multiprocessing.forkserver

    server = multiprocessing.forkserver._forkserver  # the fork server exports fork their processes from
    assert server._forkserver_pid is not None and os.waitpid(server._forkserver_pid, os.WNOHANG) == (0, 0)


def done_ids(config) -> list[str]:
    log = config.data_root / "done.log"
    return log.read_text().split() if log.exists() else []


def test_publisher_confirms_a_window_of_messages(config, broker):
    queue = broker.queue(config.queue_prefix + "sink", ["bulk.#"])
    with Publisher(config=config) as publisher:
        futures = [publisher.publish("bulk.x", {"n": i}) for i in range(1000)]
        for future in futures:
            future.result(timeout=60)
    assert broker.depth(queue) == len(futures)
    bodies = [body["n"] for _key, body in broker.drain(queue)]
    assert bodies == list(range(len(futures)))  # in order, none lost


def test_unroutable_message_is_an_error_not_a_silent_confirm(config, broker):
    with Publisher(config=config) as publisher:
        future = publisher.publish("nobody.listens.here", {"id": "x"})
        with pytest.raises(Unroutable, match="no queue is bound"):
            future.result(timeout=120)
        # the publisher keeps working after a return
        status_key = "harvest.status.dummy.dummy"
        publisher.publish(status_key, {"id": "y"}).result(timeout=120)
    assert broker.depth(config.status_queue) == 1


def test_start_is_consumed_worked_then_acked(config, broker, worker):
    broker.publish("harvest.start.dummy.dummy", start_message("h1"))
    _method, _headers, status = broker.get(config.status_queue)
    assert status["id"] == "h1" and status["status"] == "completed success"
    assert wait_for(lambda: worker.processed == 1, 120), "the worker did not count the message as processed"
    assert broker.depth(worker.queue) == 0
    assert done_ids(config) == ["h1"]


@pytest.mark.parametrize(
    "body, code",
    [
        (b"{not json", "not_json"),
        (b"[1, 2]", "schema_invalid"),
        (json.dumps({"id": "bad-status", "type": "dummy"}).encode(), "schema_invalid"),  # no path
        (json.dumps({"id": "bad-type", "type": "nonesuch", "path": "p"}).encode(), "unknown_type"),
        # an example's credential placeholder never reaches a job, so no request can carry it (issue #31)
        (json.dumps({"id": "placeholder", "type": "dummy", "path": "p",
                     "credentials": {"api_key": "YOUR_API_KEY"}}).encode(), "credential_placeholder"),
    ],
)
def test_bad_message_is_dead_lettered_with_reason_and_worker_keeps_serving(config, broker, worker, body, code):
    broker.publish("harvest.start.dummy.dummy", body)
    _method, headers, dead = broker.get(config.dead_letter_queue)
    assert headers[DEAD_REASON_CODE] == code
    assert headers[DEAD_ROUTING_KEY] == "harvest.start.dummy.dummy"
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    assert dead == (body if parsed is None else parsed)  # the message itself, unchanged
    readable_id = parsed.get("id") if isinstance(parsed, dict) else None
    if readable_id:
        _m, _h, status = broker.get(config.status_queue)
        assert status["id"] == readable_id
        assert status["status"] == "completed failure"
        assert status["errors"][0]["code"] == code
    # still serving
    broker.publish("harvest.start.dummy.dummy", start_message("after-bad"))
    assert wait_for(lambda: "after-bad" in done_ids(config), 120), "the message after the bad one was not done"


def subprocess_worker(config, broker) -> subprocess.Popen:
    # declare the worker's queue first so nothing published before it attaches is dropped
    broker.queue(config.queue_prefix + "dummy_harvester", ["harvest.start.dummy.*"])
    raw = {f.name: (str(v) if isinstance(v, Path) else v)
           for f in dataclasses.fields(config) for v in [getattr(config, f.name)]}
    return subprocess.Popen([sys.executable, "-m", "tests.dummyjob", json.dumps(raw)], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_kill_9_mid_work_loses_nothing(config, broker):
    first = subprocess_worker(config, broker)
    try:
        broker.publish("harvest.start.dummy.dummy", start_message("long", wait=True))
        assert wait_for(lambda: (config.data_root / "started-long").exists(), 120), "the subprocess job never started"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert done_ids(config) == []
    (config.data_root / "started-long").unlink()
    (config.data_root / "release").touch()
    second = subprocess_worker(config, broker)
    try:
        _m, _h, status = broker.get(config.status_queue, timeout=120)
        assert status["id"] == "long" and status["status"] == "completed success"
        assert done_ids(config) == ["long"]
        assert (config.data_root / "started-long").exists()  # the second worker really ran it
    finally:
        second.terminate()
        second.wait(timeout=120)
    assert broker.depth(config.queue_prefix + "dummy_harvester") == 0


def test_sigterm_puts_unfinished_work_back(config, broker):
    proc = subprocess_worker(config, broker)
    broker.publish("harvest.start.dummy.dummy", start_message("unfinished", wait=True))
    assert wait_for(lambda: (config.data_root / "started-unfinished").exists(), 120), "the subprocess job never started"
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) == 0
    assert (config.data_root / "interrupted-unfinished").exists()
    queue = config.queue_prefix + "dummy_harvester"
    assert wait_for(lambda: broker.depth(queue) == 1, 60), broker.depth(queue)  # back in the queue, not lost


def test_worker_reconnects_after_server_side_close(config, broker, worker):
    broker.publish("harvest.start.dummy.dummy", start_message("before"))
    assert wait_for(lambda: done_ids(config) == ["before"], 120), done_ids(config)
    assert close_connections_named(config.queue_prefix + "dummy_harvester") >= 1
    broker.publish("harvest.start.dummy.dummy", start_message("after"))
    assert wait_for(lambda: done_ids(config) == ["before", "after"], 120), done_ids(config)
    seen: list[str] = []
    assert wait_for(lambda: seen.extend(b["id"] for _k, b in broker.drain(config.status_queue)) or
                    sorted(seen) == ["after", "before"], 120), seen


def test_stop_reaches_the_running_job(config, broker):
    stopped = threading.Event()

    def stream_job(body, *, routing_key, ctx):
        ctx.stop.wait(240)  # a hang guard: the test stops it
        if ctx.stop.is_set() and not ctx.shutdown.is_set():
            stopped.set()

    with running_worker(config, dummy_spec(job=stream_job, concurrency=2)) as w:
        broker.publish("harvest.start.dummy.dummy", start_message("stream-1"))
        assert wait_for(lambda: "stream-1" in w._running, 120), "the stream job never started"
        broker.publish("harvest.stop.dummy.dummy", {"id": "unknown-stream"})  # ignored, logged
        broker.publish("harvest.stop.dummy.dummy", {"id": "stream-1"})
        assert stopped.wait(120), "harvest.stop did not reach the running job"
        assert wait_for(lambda: w.processed == 1, 120), "the stopped job was not counted as processed"
    assert broker.depth(w.queue) == 0


def test_heartbeats_stay_alive_while_a_job_works_longer_than_the_heartbeat(config, broker):
    config = dataclasses.replace(config, heartbeat=1)
    finished = threading.Event()

    def slow_job(body, *, routing_key, ctx):
        # Six missed heartbeats would make the broker drop a connection whose I/O thread was blocked.
        ctx.stop.wait(6)
        finished.set()

    with running_worker(config, dummy_spec(job=slow_job)) as w:
        broker.publish("harvest.start.dummy.dummy", start_message("slow"))
        assert finished.wait(120), "the slow job never finished"
        assert wait_for(lambda: w.processed == 1, 120), "the slow job was not counted as processed"
        assert w.connections == 1  # never had to reconnect
    assert broker.depth(w.queue) == 0


def test_a_job_cannot_publish_an_invalid_message(config, broker):
    errors = []

    def bad_job(body, *, routing_key, ctx):
        try:
            ctx.publish("harvest.status.dummy.dummy", {"id": body["id"], "status": "finished-ish"})
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            errors.append(exc)

    with running_worker(config, dummy_spec(job=bad_job)) as w:
        broker.publish("harvest.start.dummy.dummy", start_message("bad-publisher"))
        assert wait_for(lambda: w.processed == 1, 120), "the job was not counted as processed"
    assert len(errors) == 1 and getattr(errors[0], "code", None) == "schema_invalid"
    assert broker.depth(config.status_queue) == 0  # nothing invalid reached the wire


def test_shutdown_leaves_running_and_waiting_work_in_the_queue(config, broker):
    started = []

    def job(body, *, routing_key, ctx):
        started.append(body["id"])
        ctx.stop.wait(240)  # until shutdown (a hang guard: the test shuts the worker down)
        raise JobInterrupted()

    # prefetch = concurrency = 1: the second waits in the queue while the first runs
    with running_worker(config, dummy_spec(job=job)) as w:
        broker.publish("harvest.start.dummy.dummy", start_message("first"))
        broker.publish("harvest.start.dummy.dummy", start_message("second"))
        assert wait_for(lambda: started == ["first"], 120), started
    assert started == ["first"]  # the second never started during shutdown
    # both back in the queue (a quorum queue counts a returned message once its leader applied the return)
    assert wait_for(lambda: broker.depth(w.queue) == 2, 60), broker.depth(w.queue)
