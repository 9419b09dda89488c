"""One runner per harvest without a shared filesystem (issue 36): two `swath worker` replicas on the real
RabbitMQ, each with its own data root (as on two hosts), SWATH_STORAGE_URL=s3://... so claims, state and
final-status records live in the real PostgreSQL store."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

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
from tests.requesterkit import pg_url  # noqa: F401  (fixture)

pytestmark = pytest.mark.reliability
HARVESTS = 4
WAIT_LINE = "is running in pid"  # what a replica logs when it leaves a harvest to the claim's holder


def replicas_on_two_hosts(config, tmp_path, url: str, s3_config) -> list[WorkerProcess]:
    replicas = []
    for n in range(2):
        host = tmp_path / f"host{n}"
        (host / "data").mkdir(parents=True)
        own = dataclasses.replace(config, data_root=host / "data", db_url=url)
        env = worker_env(own, SWATH_STORAGE_URL=s3_config.storage_url,
                         SWATH_STORAGE_ENDPOINT=s3_config.storage_endpoint,
                         SWATH_STORAGE_ACCESS_KEY_ID=s3_config.storage_access_key_id,
                         SWATH_STORAGE_SECRET_ACCESS_KEY=s3_config.storage_secret_access_key)
        replicas.append(WorkerProcess(config=own, name="generic_harvester", log_dir=host, env=env))
    return replicas


def stored_warcs(seaweed, s3_config, tmp_path, under: str = "") -> list[Path]:
    """The bucket's WARCs (under the data root's folder `under`), downloaded to read them back."""
    bucket, _, prefix = s3_config.storage_url.removeprefix("s3://").partition("/")
    client, out = seaweed.client(), tmp_path / "bucket"
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for item in client.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{under}").get("Contents", []):
        paths.append(out / f"{len(list(out.iterdir()))}.warc.gz")
        paths[-1].write_bytes(client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read())
    return paths


def start_for(api: ReliabilityApi, harvest_id: str, n: int) -> dict:
    return {"id": harvest_id, "type": "generic_pages", "path": f"collections/pg/{n}",
            "seeds": [{"id": "s1", "token": api.page_url(harvest_id)}], "credentials": {"api_key": GENERIC_SECRET},
            "collection_set": {"id": "pg"}, "collection": {"id": str(n)}}


def tokens(url: str, ids: list[str]) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT harvest_id, token FROM harvest_claims WHERE harvest_id = ANY(:ids)"),
                            {"ids": ids}).all()
    engine.dispose()
    return dict(rows)  # type: ignore[arg-type]


def test_two_hosts_given_the_same_start_at_once_run_it_once(config, tmp_path, pg_url, s3_config, seaweed):  # noqa: F811
    config = dataclasses.replace(config, warc_max_bytes=6000)
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=6, per_page=5, delay=0.05)
        declare_queues(config, ["generic_harvester"])
        replicas = replicas_on_two_hosts(config, tmp_path, pg_url, s3_config)
        for replica in replicas:
            replica.start()
        ids = [f"pgclaim:{tmp_path.name[-6:]}:{n}" for n in range(HARVESTS)]
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                assert got.wait(lambda: all(r.ready() for r in replicas), 120), "replicas attached to the queue"
                for n, harvest_id in enumerate(ids):
                    start = start_for(api, harvest_id, n)
                    for _ in range(2):  # both copies in the queue at once: each idle replica takes one
                        requester.publish("harvest.start.generic.generic_pages", start).result(120)
                    assert got.wait(lambda hid=harvest_id: hid in got.finals(), 180), f"final status of {harvest_id}"
                    assert got.wait(lambda hid=harvest_id: all(hid in r.log_text() for r in replicas), 120), \
                        f"both replicas took a copy of {harvest_id}"
                got.drained()
                finals = got.finals()
        finally:
            exits = [replica.stop() for replica in replicas]
    assert exits == [0, 0], [r.log_text()[-4000:] for r in replicas]
    for n, harvest_id in enumerate(ids):
        assert [f["status"] for f in finals[harvest_id]] == ["completed success"], (harvest_id, finals[harvest_id])
        served = api.served.items[harvest_id]
        assert len(served) == 6 * 5, f"{harvest_id}: pages fetched more than once"
        paths = stored_warcs(seaweed, s3_config, tmp_path / harvest_id.replace(":", "-"), f"collections/pg/{n}/")
        assert sorted(items_in_warcs(paths)["pages"]) == sorted(served)
    for replica in replicas:  # nothing of the claim or the state went to files
        root = replica.config.data_root
        assert not list(root.rglob("*.lock")) and not list(root.rglob("swath-state.json")), root
    waits = sum(replica.log_text().count(WAIT_LINE) for replica in replicas)
    assert waits >= 1, "no copy ever met a running harvest: the race was not exercised"
    # each copy took the claim once: the one that ran it, then the one that found it finished in the store
    assert tokens(pg_url, ids) == {harvest_id: 2 for harvest_id in ids}


def test_kill_9_of_the_running_host_lets_the_other_resume_it_from_the_store(config, tmp_path, pg_url, s3_config,  # noqa: F811
                                                                           seaweed):
    config = dataclasses.replace(config, warc_max_bytes=3000)
    pages, per_page = 40, 5
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=pages, per_page=per_page, delay=0.05)
        declare_queues(config, ["generic_harvester"])
        replicas = replicas_on_two_hosts(config, tmp_path, pg_url, s3_config)
        harvest_id = f"pgkill:{tmp_path.name[-6:]}"
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                replicas[0].start()
                assert got.wait(replicas[0].ready, 120), "the first host attached to the queue"
                requester.publish("harvest.start.generic.generic_pages", start_for(api, harvest_id, 0)).result(120)
                # host 0 began uploading its second WARC (harvesters/uploads.py logs it)
                assert got.wait(lambda: replicas[0].log_text().count("uploading ") >= 2, 120), "two WARCs on host 0"
                replicas[1].start()
                assert got.wait(replicas[1].ready, 120), "the second host attached to the queue"
                replicas[0].kill9()  # the broker hands the unacked start to host 1; PostgreSQL frees the claim
                assert got.wait(lambda: harvest_id in got.finals(), 240), "final status after the kill"
                got.drained()
                finals = got.finals()[harvest_id]
        finally:
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
    assert tokens(pg_url, [harvest_id]) == {harvest_id: 2}  # host 0's run, then host 1's
