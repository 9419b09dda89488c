"""A test-side view of the real broker: read queues, count messages, close connections server-side."""

from __future__ import annotations

import contextlib
import subprocess
import threading
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pika
import pika.exceptions

from swath.core.config import Config
from swath.messages.broker import declare_topology, declare_work_queue
from swath.messages.topology import connection_parameters
from swath.messages.worker import Worker


class BrokerProbe:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.connection = pika.BlockingConnection(connection_parameters(config, name="swath-test-probe"))
        self.channel = self.connection.channel()
        declare_topology(self.channel, config)

    def queue(self, name: str, bindings: list[str]) -> str:
        """Declare a durable test queue bound on the suite's exchange (a stand-in requester)."""
        declare_work_queue(self.channel, self.config, name, bindings)
        return name

    def depth(self, queue: str) -> int:
        return self.channel.queue_declare(queue=queue, passive=True).method.message_count

    def get(self, queue: str, timeout: float = 120.0) -> tuple[Any, dict[str, Any], Any]:
        """Wait for one message (the timeout is a hang guard); returns (method, headers, decoded body)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            method, props, body = self.channel.basic_get(queue, auto_ack=True)
            if method is not None:
                return method, dict(props.headers or {}), orjson.loads(body) if _is_json(body) else body
            self.connection.process_data_events(time_limit=0.05)
        raise AssertionError(f"no message on {queue} within {timeout}s")

    def drain(self, queue: str) -> list[tuple[str, Any]]:
        """Every message currently in `queue` as (routing key, body)."""
        out = []
        while True:
            method, _props, body = self.channel.basic_get(queue, auto_ack=True)
            if method is None:
                return out
            out.append((method.routing_key, orjson.loads(body) if _is_json(body) else body))

    def publish(self, routing_key: str, body: bytes | dict) -> None:
        data = body if isinstance(body, bytes) else orjson.dumps(body)
        self.channel.basic_publish(self.config.exchange, routing_key, data,
                                   pika.BasicProperties(delivery_mode=2))

    def close(self) -> None:
        if self.connection.is_open:
            self.connection.close()


def _is_json(body: bytes) -> bool:
    try:
        orjson.loads(body)
        return True
    except orjson.JSONDecodeError:
        return False


def close_connections_named(prefix: str) -> int:
    """Close, from the server side, every connection whose client-given name starts with `prefix`."""
    out = subprocess.run(
        ["rabbitmqctl", "-q", "list_connections", "pid", "client_properties"],
        check=True, capture_output=True, text=True,
    ).stdout
    closed = 0
    for line in out.splitlines():
        pid, _, props = line.partition("\t")
        if f'{{"connection_name","{prefix}' in props:
            subprocess.run(["rabbitmqctl", "-q", "close_connection", pid, "closed by test"], check=True,
                           capture_output=True)
            closed += 1
    return closed


# queues tests declare under their prefix besides swath's own (found with grep 'queue_prefix + "' tests)
TEST_QUEUES = ("requester", "export-requester", "starts", "stops", "sink", "sfm_ui", "exports", "warm-status",
               "dummy_harvester", "dummy_exporter")


def delete_queues_of(tag: str) -> None:
    """Delete one test's queues on the system broker (the conftest `config` names them after `tag`); the ones
    not known by name go at the session's end (delete_test_entities)."""
    from swath.services import all_services

    names = [f"{tag}_dead", f"{tag}_status", *(f"{tag}_{name}" for name in (*all_services(), *TEST_QUEUES))]
    try:
        conn = pika.BlockingConnection(pika.URLParameters(Config.from_env({}).amqp_url))
    except (pika.exceptions.AMQPError, OSError):
        return  # no broker: the test that needed one failed already
    try:
        channel = conn.channel()
        for name in names:
            channel.queue_delete(name)  # a queue that is not there is fine
    finally:
        conn.close()


def delete_test_entities(prefix: str) -> None:
    """Remove every queue and exchange whose name starts with `prefix` (one test session's)."""
    conn = pika.BlockingConnection(pika.URLParameters(Config.from_env({}).amqp_url))
    ch = conn.channel()
    for kind in ("queues", "exchanges"):
        names = subprocess.run(["rabbitmqctl", "-q", f"list_{kind}", "name"], capture_output=True,
                               text=True).stdout.split()
        for name in names:
            if name.startswith(prefix):
                if kind == "queues":
                    ch.queue_delete(name)
                else:
                    ch.exchange_delete(name)
    conn.close()


@contextlib.contextmanager
def running_worker(config, service) -> Iterator[Worker]:
    """A Worker for `service` (a worker name or a ServiceSpec) running in a thread, attached to its queue."""
    spec = _service(service) if isinstance(service, str) else service
    name = spec.name
    worker = Worker(config=config, spec=spec)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert worker.consuming.wait(120), f"{name} did not attach to its queue"
    try:
        yield worker
    finally:
        worker.request_shutdown()
        thread.join(timeout=120)
        assert not thread.is_alive(), f"{name} did not shut down within 120 s"


def until_final(broker, queue: str, *, timeout: float = 120.0) -> list[tuple[str, dict]]:
    """Read (routing key, body) from `queue` until a final status arrives (`timeout`: for each message)."""
    received: list[tuple[str, dict]] = []
    while True:
        method, _headers, body = broker.get(queue, timeout=timeout)
        received.append((method.routing_key, body))
        if ".status." in method.routing_key and body["status"] != "running":
            return received


def _service(name: str):
    from swath.services import all_services

    return all_services()[name]
