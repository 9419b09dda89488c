"""One runner per harvest without a shared filesystem (issue 36): two `swath worker` replicas on the real
RabbitMQ, each with its own data root (as on two hosts), SWATH_STORAGE_URL=s3://... so claims, state and
final-status records live in the real PostgreSQL store."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swath.messages.broker import Publisher
from tests.fakes.httpserver import FakeServer
from tests.objectstoragekit import as_files, bucket_objects, claim_tokens
from tests.reliability.kit import (
    Collector,
    ReliabilityApi,
    WorkerProcess,
    declare_queues,
    items_in_warcs,
)
from tests.reliability.racekit import race
from tests.requesterkit import pg_url  # noqa: F401  (fixture)

pytestmark = pytest.mark.reliability
HARVESTS = 4


def replicas_on_two_hosts(config, tmp_path, url: str, s3_config) -> list[WorkerProcess]:
    """A generic_harvester on each of two hosts: its own data root, the bucket of `s3_config`, the store at `url`."""
    replicas = []
    for n in range(2):
        host = tmp_path / f"host{n}"
        (host / "data").mkdir(parents=True)
        own = dataclasses.replace(config, data_root=host / "data", db_url=url, storage_url=s3_config.storage_url,
                                  storage_endpoint=s3_config.storage_endpoint,
                                  storage_access_key_id=s3_config.storage_access_key_id,
                                  storage_secret_access_key=s3_config.storage_secret_access_key)
        replicas.append(WorkerProcess(config=own, name="generic_harvester", log_dir=host))
    return replicas


def stored_warcs(seaweed, s3_config, tmp_path, under: str = "") -> list[Path]:
    """The bucket's WARCs (under the data root's folder `under`), downloaded to read them back."""
    objects = bucket_objects(seaweed.client(), f"{s3_config.storage_url}/{under}")
    return as_files((data for data, _ in objects.values()), tmp_path / "bucket")


def test_two_hosts_given_the_same_start_at_once_run_it_once(config, tmp_path, pg_url, s3_config, seaweed):  # noqa: F811
    config = dataclasses.replace(config, warc_max_bytes=6000)
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=6, per_page=5, delay=0.05)
        declare_queues(config, ["generic_harvester"])
        replicas = replicas_on_two_hosts(config, tmp_path, pg_url, s3_config)
        ids = [f"pgclaim:{tmp_path.name[-6:]}:{n}" for n in range(HARVESTS)]
        ran = race(config, replicas, [api.start(hid, collection_set="pg", collection=str(n))
                                      for n, hid in enumerate(ids)])
    assert ran.exits == [0, 0], [r.log_text()[-4000:] for r in replicas]
    finals = ran.finals
    for n, harvest_id in enumerate(ids):
        assert [f["status"] for f in finals[harvest_id]] == ["completed success"], (harvest_id, finals[harvest_id])
        served = api.served.items[harvest_id]
        assert len(served) == 6 * 5, f"{harvest_id}: pages fetched more than once"
        paths = stored_warcs(seaweed, s3_config, tmp_path / harvest_id.replace(":", "-"), f"collections/pg/{n}/")
        assert sorted(items_in_warcs(paths)["pages"]) == sorted(served)
    for replica in replicas:  # nothing of the claim or the state went to files
        root = replica.config.data_root
        assert not list(root.rglob("*.lock")) and not list(root.rglob("swath-state.json")), root
    assert ran.waits >= 1, "no copy ever met a running harvest: the race was not exercised"
    # each copy took the claim once: the one that ran it, then the one that found it finished in the store
    assert claim_tokens(pg_url, ids) == {harvest_id: 2 for harvest_id in ids}


def test_kill_9_of_the_running_host_lets_the_other_resume_it_from_the_store(config, tmp_path, pg_url, s3_config,  # noqa: F811
                                                                           seaweed):
    config = dataclasses.replace(config, warc_max_bytes=3000)
    pages, per_page = 40, 5
    with FakeServer() as server:
        # page 21 on waits until host 0 is killed: a second host starting slowly on a busy machine must not find
        # the harvest already finished by the first
        api = ReliabilityApi(server, pages=pages, per_page=per_page, delay=0.05, hold_after=20)
        declare_queues(config, ["generic_harvester"])
        replicas = replicas_on_two_hosts(config, tmp_path, pg_url, s3_config)
        harvest_id = f"pgkill:{tmp_path.name[-6:]}"
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                replicas[0].start()
                assert got.wait(replicas[0].ready, 120), "the first host attached to the queue"
                requester.publish(*api.start(harvest_id, collection_set="pg", collection="0")).result(120)
                # host 0 began uploading its second WARC (harvesters/uploads.py logs it)
                assert got.wait(lambda: replicas[0].log_text().count("uploading ") >= 2, 120), "two WARCs on host 0"
                replicas[1].start()
                assert got.wait(replicas[1].ready, 120), "the second host attached to the queue"
                replicas[0].kill9()  # the broker hands the unacked start to host 1; PostgreSQL frees the claim
                api.release()
                assert got.wait(lambda: harvest_id in got.finals(), 240), "final status after the kill"
                got.drained()
                finals = got.finals()[harvest_id]
        finally:
            api.release()
            exits = [replica.stop() for replica in replicas]
    assert exits[1] == 0, replicas[1].log_text()[-4000:]
    assert [f["status"] for f in finals] == ["completed success"], finals
    assert "harvest_resumed" in [w["code"] for w in finals[0]["warnings"]]
    served = api.served.items[harvest_id]
    recorded = set(items_in_warcs(stored_warcs(seaweed, s3_config, tmp_path))["pages"])
    assert set(served) <= recorded, "an item the fake served is in no WARC of either host"
    assert len(served) < 2 * pages * per_page, "host 1 went on from the store's journal, not from page 1"
    counted = sum(day.get("items", 0) for day in finals[0]["stats"].values())
    assert counted == pages * per_page, "each item counted once across the two hosts"
    assert claim_tokens(pg_url, [harvest_id]) == {harvest_id: 2}  # host 0's run, then host 1's
