"""Quorum queues on the real broker: what swath declares, `swath broker setup` finding and moving classic queues
of an older swath without losing a message, and a poison message (its real worker process kill -9'ed on every
delivery) dead-lettered with its reason after the delivery limit instead of looping forever."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import threading
from pathlib import Path
from typing import Any

import pika
import pika.exceptions
import pytest

from swath.core.config import Config
from swath.messages import codes
from swath.messages.broker_errors import classify
from swath.messages.migrate import SUFFIX
from swath.messages.topology import STATUS_BINDINGS, declare_work_queue
from swath.messages.worker import wait_for
from swath.services import all_services
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.reliability.kit import GENERIC_SECRET, WorkerProcess, declare_queues
from tests.test_broker_errors import run_swath


def queue_types(config: Config) -> dict[str, tuple[str, str]]:
    """name -> (type, arguments) of this test's queues, as the broker lists them."""
    out = subprocess.run(["rabbitmqctl", "-q", "list_queues", "name", "type", "arguments"], check=True,
                         capture_output=True, text=True, timeout=120).stdout
    rows = [line.split("\t") for line in out.splitlines() if line.startswith(config.exchange)]
    return {row[0]: (row[1], row[2]) for row in rows}


def classic(channel: Any, queue: str, exchange: str, bindings: list[str], **arguments: Any) -> None:
    """The queue as swath declared it before quorum queues."""
    channel.queue_declare(queue=queue, durable=True, arguments=arguments or None)
    for binding in bindings:
        channel.queue_bind(queue=queue, exchange=exchange, routing_key=binding)


def read_all(channel: Any, queue: str) -> list[tuple[str, bytes, str | None, dict[str, Any]]]:
    out = []
    while True:
        method, props, body = channel.basic_get(queue, auto_ack=True)
        if method is None:
            return out
        headers = {k: v for k, v in (props.headers or {}).items() if k != "x-delivery-count"}
        out.append((method.routing_key, body, props.message_id, headers))


def test_every_queue_swath_declares_is_a_quorum_queue_with_the_delivery_limit(config: Config, broker) -> None:
    declare_queues(config, ["generic_harvester"])
    types = queue_types(config)
    for queue in (config.dead_letter_queue, config.status_queue, config.queue_prefix + "generic_harvester"):
        assert types[queue][0] == "quorum", (queue, types)
    assert f'{{"x-delivery-limit",{config.delivery_limit}}}' in types[config.queue_prefix + "generic_harvester"][1]
    assert "x-delivery-limit" not in types[config.dead_letter_queue][1]  # peeking it must never drop a letter
    assert "x-delivery-limit" not in types[config.status_queue][1]  # the monitor returns statuses while the store
    assert "x-dead-letter-strategy" in types[config.status_queue][1]  # is away; it dead-letters bad ones itself


def test_a_classic_queue_of_the_same_name_is_refused_with_what_to_do(config: Config, broker) -> None:
    queue = config.queue_prefix + "generic_harvester"
    classic(broker.channel, queue, config.exchange, ["harvest.start.generic.*"],
            **{"x-dead-letter-exchange": config.dead_letter_exchange})
    channel = broker.connection.channel()
    with pytest.raises(pika.exceptions.ChannelClosedByBroker) as refused:
        declare_work_queue(channel, config, queue, ["harvest.start.generic.*"])
    error = classify(refused.value, config.amqp_url)
    assert error.code == codes.BROKER_QUEUE_MISMATCH
    assert queue in error.message and "swath broker setup --migrate" in error.message


def test_broker_setup_names_classic_queues_and_migrate_moves_them_keeping_every_message(config: Config,
                                                                                        broker) -> None:
    channel = broker.connection.channel()
    channel.queue_delete(config.dead_letter_queue)  # the probe declared swath's own; play an older swath's
    channel.queue_delete(config.status_queue)
    work = config.queue_prefix + "generic_harvester"
    dlx = {"x-dead-letter-exchange": config.dead_letter_exchange}
    classic(channel, config.dead_letter_queue, config.dead_letter_exchange, ["#"])
    classic(channel, config.status_queue, config.exchange, STATUS_BINDINGS, **dlx)
    classic(channel, work, config.exchange, all_services()["generic_harvester"].bindings, **dlx)
    channel.confirm_delivery()
    sent = {work: [("harvest.start.generic.generic_pages", b'{"id": "h1"}', "m1", {}),
                   ("harvest.start.generic.generic_stream", b'{"id": "h2"}', "m2", {"x-custom": "kept"}),
                   ("harvest.start.generic.generic_pages", b'{"id": "h3"}', "m3", {})],
            config.status_queue: [("harvest.status.generic.generic_pages", b'{"id": "h0"}', "s1", {}),
                                  ("warc_created", b'{"warc_id": "w"}', "s2", {})],
            config.dead_letter_queue: [("harvest.start.generic.generic_pages", b'{"id": "d"}', "d1",
                                        {"x-swath-error-code": "schema_invalid"})]}
    for queue, messages in sent.items():
        exchange = config.dead_letter_exchange if queue == config.dead_letter_queue else config.exchange
        for key, body, message_id, headers in messages:
            channel.basic_publish(exchange, key, body, pika.BasicProperties(
                delivery_mode=2, message_id=message_id, headers=headers or None), mandatory=True)

    done, _ = run_swath(config, "broker", "setup", "--json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    states = {row["queue"]: row for row in report["queues"]}
    assert report["error"]["code"] == codes.BROKER_QUEUE_MISMATCH
    assert {q for q, row in states.items() if row["state"] == "mismatch"} == set(sent)
    assert all(states[q]["messages"] == len(sent[q]) for q in sent)
    assert all(row["state"] == "declared" for q, row in states.items() if q not in sent)
    assert {queue_types(config)[q][0] for q in sent} == {"classic"}  # left alone: nothing moved or lost

    done, _ = run_swath(config, "broker", "setup", "--migrate", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    states = {row["queue"]: row for row in json.loads(done.stdout)["queues"]}
    assert {q: (states[q]["state"], states[q]["messages"]) for q in sent} == \
        {q: ("migrated", len(messages)) for q, messages in sent.items()}
    types = queue_types(config)
    assert {types[q][0] for q in sent} == {"quorum"}
    assert not any(name.endswith(SUFFIX) for name in types), types  # the temporary queues are gone
    for queue, messages in sent.items():
        assert read_all(channel, queue) == messages, queue  # same keys, bodies, ids, headers, order

    done, _ = run_swath(config, "broker", "setup", "--json")  # idempotent now
    assert done.returncode == 0 and {row["state"] for row in json.loads(done.stdout)["queues"]} == {"declared"}


def test_an_interrupted_migration_is_finished_by_the_next_setup(config: Config, broker) -> None:
    queue = config.status_queue  # already quorum (the probe declared it); the move back was cut short
    temp = queue + SUFFIX
    channel = broker.connection.channel()
    channel.exchange_declare(temp, "topic", durable=True)
    channel.queue_declare(temp, durable=True, arguments={"x-queue-type": "quorum"})
    channel.queue_bind(temp, temp, "#")
    channel.confirm_delivery()
    keys = ["harvest.status.generic.generic_pages", "export.status.generic.csv", "warc_created"]
    for n, key in enumerate(keys):
        channel.basic_publish(temp, key, b"{}", pika.BasicProperties(delivery_mode=2, message_id=f"m{n}"))
    done, _ = run_swath(config, "broker", "setup", "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(r for r in json.loads(done.stdout)["queues"] if r["queue"] == queue)
    assert (row["state"], row["messages"]) == ("migrated", len(keys))
    assert [(key, mid) for key, _b, mid, _h in read_all(channel, queue)] == [(k, f"m{n}") for n, k in enumerate(keys)]
    assert temp not in queue_types(config)


def test_a_message_that_kills_its_worker_every_time_is_dead_lettered_after_the_limit(config: Config, broker,
                                                                                     tmp_path: Path) -> None:
    config = dataclasses.replace(config, delivery_limit=2)
    declare_queues(config, ["generic_harvester"])
    arrived, release = [], threading.Event()

    def hang(request: Request) -> Response:  # the harvest's first request: its worker is killed while it waits
        arrived.append(request)
        release.wait(300)
        return Response(503, b"{}")

    def dead() -> int:
        return broker.depth(config.dead_letter_queue)

    worker = WorkerProcess(config=config, name="generic_harvester", log_dir=tmp_path)
    deliveries = 0
    with FakeServer({"/hang": hang}) as server:
        try:
            worker.start()
            broker.publish("harvest.start.generic.generic_pages", {
                "id": "poison-1", "type": "generic_pages", "path": "collections/poison",
                "seeds": [{"id": "s1", "token": f"{server.url}/hang"}], "credentials": {"api_key": GENERIC_SECRET},
                "collection_set": {"id": "cs"}, "collection": {"id": "poison"}})
            while True:
                assert wait_for(lambda seen=deliveries: len(arrived) > seen or dead() > 0, 180), \
                    f"delivery {deliveries + 1} never reached the API\n" + worker.log_text()[-3000:]
                if dead() > 0:
                    break
                deliveries += 1
                worker.kill9()
                assert deliveries <= config.delivery_limit + 1, "the message kept coming back past the limit"
                worker.start()
        finally:
            release.set()
            worker.stop()
    # RabbitMQ's limit counts returns: the message went back `limit` times, the next return dead-lettered it
    assert deliveries == config.delivery_limit + 1
    assert broker.depth(config.queue_prefix + "generic_harvester") == 0
    done, _ = run_swath(config, "broker", "dead-letters", "list", "--json")
    assert done.returncode == 0, done.stderr
    letters = json.loads(done.stdout)["dead_letters"]
    assert [(d["message_id"], d["code"], d["queue"]) for d in letters] == \
        [("poison-1", codes.DELIVERY_LIMIT, config.queue_prefix + "generic_harvester")]
    assert "SWATH_DELIVERY_LIMIT" in letters[0]["reason"]
    assert GENERIC_SECRET not in done.stdout
