"""Two suites on one exchange, type by type (SWATH_PLATFORMS): swath's worker binds only the types the site gave
it, another suite's consumer keeps the rest, and each message is handled once (real RabbitMQ, real worker)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from swath.messages.broker import declare_work_queue
from swath.services import UnknownService, service
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import PagedApi, start_message
from tests.fakes.httpserver import FakeServer


def test_a_worker_serving_nothing_enabled_is_refused_and_unknown_names_are_named():
    with pytest.raises(UnknownService, match="SWATH_PLATFORMS"):
        service("twitter_harvester", ("flickr",))
    with pytest.raises(UnknownService, match="twitter_bogus"):
        service("flickr_harvester", ("flickr", "twitter_bogus"))
    assert service("flickr_harvester", ("flickr",)).bindings == service("flickr_harvester").bindings


def test_two_suites_on_one_exchange_each_message_handled_once(config, broker):
    swath_spec = service("generic_harvester", ("generic_pages",))
    wide = service("generic_harvester")
    assert "harvest.start.generic.*" in wide.bindings and "harvest.start.generic.*" not in swath_spec.bindings
    # the queue as an earlier deployment left it (all generic types), and the other suite's queue for the rest
    declare_work_queue(broker.channel, config, config.queue_prefix + wide.name, wide.bindings)
    other = broker.queue(config.queue_prefix + "other_suite_harvester", ["harvest.start.generic.generic_stream"])
    status = broker.queue(config.queue_prefix + "requester", ["harvest.status.#"])
    with FakeServer() as server:
        PagedApi(server, pages=1)
        pages = [start_message(f"{server.url}/pages", harvest_id=f"pages-{uuid.uuid4().hex}", path=f"c{i}")
                 for i in range(3)]
        streams = [start_message(f"{server.url}/stream", harvest_id=f"stream-{uuid.uuid4().hex}",
                                 type_="generic_stream", path=f"s{i}") for i in range(2)]
        with running_worker(dataclasses.replace(config, platforms=("generic_pages",)), swath_spec):
            for body in pages + streams:
                broker.publish(f"harvest.start.generic.{body['type']}", body)
            finals = [until_final(broker, status)[-1][1] for _ in pages]
        handed_to_other = broker.drain(other)
    assert sorted(f["id"] for f in finals) == sorted(p["id"] for p in pages)  # each swath type once, by swath
    assert all(f["status"] == "completed success" for f in finals), finals
    assert sorted(body["id"] for _, body in handed_to_other) == sorted(s["id"] for s in streams)  # once, by the other
    assert broker.drain(status) == []  # swath never touched a stream start: no status for it
    assert broker.depth(config.queue_prefix + wide.name) == 0  # nothing left waiting in swath's queue either
