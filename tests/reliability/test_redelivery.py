"""A finished harvest delivered again: what the broker does when a worker dies after its final status was
confirmed and before the ack (the crash run hits this window now and then), or when a requester repeats
a start it got no confirm for."""

from __future__ import annotations

import pytest

from swath.messages.broker import Publisher
from tests.fakes.httpserver import FakeServer
from tests.reliability.kit import (
    FINAL,
    Collector,
    ReliabilityApi,
    WorkerProcess,
    declare_queues,
)

pytestmark = pytest.mark.reliability


def test_redelivered_finished_harvest_is_not_run_again(config, tmp_path):
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=3, per_page=4, delay=0.0)
        declare_queues(config, ["generic_harvester"])
        worker = WorkerProcess(config=config, name="generic_harvester", log_dir=tmp_path).start()
        start = api.start("rel:again:1", collection_set="rel", collection="again", feed="a")
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                requester.publish(*start).result(120)
                assert got.wait(lambda: "rel:again:1" in got.finals(), 120), "the first run never ended"
                served_once = len(api.served.items["a"])
                warcs_once = sorted(config.data_root.rglob("*.warc.gz"))
                requester.publish(*start).result(120)  # the redelivery
                # the worker says it ignored the repeat (then all it published for it has been published)
                assert got.wait(lambda: len(got.finals()["rel:again:1"]) > 1
                                or "rel:again:1 already finished" in worker.log_text(), 120), worker.log_text()[-3000:]
                finals = got.finals()["rel:again:1"]
        finally:
            assert worker.stop() == 0
    assert served_once == 3 * 4
    assert [f["status"] for f in finals] == ["completed success"], "the harvest ended twice"
    assert len(api.served.items["a"]) == served_once, "pages were fetched again"
    assert sorted(config.data_root.rglob("*.warc.gz")) == warcs_once
    assert all(f["status"] in FINAL for f in finals)
