"""One runner per harvest: two replicas handed the same start at the same moment run it once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swath.harvesters.warc import file_sha1
from swath.messages.broker import Publisher
from tests.fakes.httpserver import FakeServer
from tests.reliability.kit import (
    GENERIC_SECRET,
    Collector,
    ReliabilityApi,
    WorkerProcess,
    declare_queues,
    items_in_warcs,
    worker_env,
)

pytestmark = pytest.mark.reliability
HARVESTS = 8
WAIT_LINE = "is running in pid"  # what a replica logs when it leaves a harvest to the claim's holder


def test_two_replicas_given_the_same_start_at_once_run_it_once(config, tmp_path):
    config = dataclasses.replace(config, warc_max_bytes=6000)  # every harvest rotates while the other waits
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=6, per_page=5, delay=0.05)
        declare_queues(config, ["generic_harvester"])
        replicas = [WorkerProcess(config=config, name="generic_harvester", log_dir=tmp_path / f"r{n}",
                                  env=worker_env(config)) for n in range(2)]
        for replica in replicas:
            replica.log_path.parent.mkdir()
            replica.start()
        ids = [f"claim:{n}" for n in range(HARVESTS)]
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                assert got.wait(lambda: all(r.ready() for r in replicas), 120), "replicas attached to the queue"
                for n, harvest_id in enumerate(ids):
                    start = {"id": harvest_id, "type": "generic_pages", "path": f"collections/claim/{n}",
                             "seeds": [{"id": "s1", "token": api.page_url(harvest_id)}],
                             "credentials": {"api_key": GENERIC_SECRET},
                             "collection_set": {"id": "claim"}, "collection": {"id": str(n)}}
                    # both copies are in the queue at once: each idle replica takes one
                    for _ in range(2):
                        requester.publish("harvest.start.generic.generic_pages", start).result(120)
                    assert got.wait(lambda hid=harvest_id: hid in got.finals(), 120), f"final status of {harvest_id}"
                    assert got.wait(lambda hid=harvest_id: all(r.log_text().count(hid) >= 1 for r in replicas), 120), \
                        f"both replicas took a copy of {harvest_id}"
                finals, warcs = got.finals(), got.warcs()
        finally:
            exits = [replica.stop() for replica in replicas]
    assert exits == [0, 0]
    for n, harvest_id in enumerate(ids):
        assert [f["status"] for f in finals[harvest_id]] == ["completed success"], (harvest_id, finals[harvest_id])
        served = api.served.items[harvest_id]
        assert len(served) == 6 * 5, f"{harvest_id}: pages fetched more than once"
        announced = [w["warc"] for w in warcs if w["harvest"]["id"] == harvest_id]
        paths = sorted((config.data_root / f"collections/claim/{n}").rglob("*.warc.gz"))
        assert sorted(w["path"] for w in announced) == [str(p) for p in paths]
        assert sorted(items_in_warcs(paths)["pages"]) == sorted(served)
        for warc in announced:  # what was announced is what is on disk
            assert (warc["bytes"], warc["sha1"]) == (Path(warc["path"]).stat().st_size, file_sha1(Path(warc["path"])))
    assert not list(config.data_root.rglob("*.open")), "a WARC was left open"
    assert not list((config.data_root / ".swath" / "claims").glob("*.lock")), "a claim was not released"
    waits = sum(replica.log_text().count(WAIT_LINE) for replica in replicas)
    assert waits >= 1, "no copy ever met a running harvest: the race was not exercised"
