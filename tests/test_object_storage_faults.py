"""Several machines, no shared disk (issue 36; docs/deployment.md "Several machines, no shared disk" runs as
these tests do): worker "hosts" are `swath worker` processes, each with its OWN data root (its staging folder),
on the real RabbitMQ, with SWATH_STORAGE_URL=s3://... on a real SeaweedFS (tests/seaweed.py) and claims and state
in a fresh PostgreSQL database. What every test checks, from the bucket itself: every item a fake served is in a
stored object exactly once, every object announced in warc_created is in the bucket with that size and SHA-1 (and
nothing else is), each WARC id is announced with one content only, and no WARC is left in a staging folder."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
import json
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from swath.core.objects_base import FENCE_METADATA
from swath.messages.broker import Publisher
from tests import cluster as clusters
from tests.fakes.httpserver import FakeServer
from tests.fakes.tumblr import API_KEY, FakeTumblr, build_blogs
from tests.reliability.kit import (
    GENERIC_SECRET,
    Collector,
    ReliabilityApi,
    WorkerProcess,
    declare_queues,
    items_in_warcs,
    worker_env,
)
from tests.requesterkit import fresh_database
from tests.seaweed import ACCESS_KEY, SECRET_KEY, Seaweed

WAIT = 240.0  # seconds: only a guard against a hang on a busy shared machine
UPLOADING = "uploading "  # harvesters/uploads.py logs it as each upload begins


@dataclasses.dataclass
class Site:
    """The shared services of one test: the bucket's URL and its store, the PostgreSQL store's URL."""

    config: Any
    seaweed: Seaweed
    bucket: str
    db_url: str

    @property
    def storage_url(self) -> str:
        return f"s3://{self.bucket}/archive"

    def host(self, tmp_path: Path, n: int, names: tuple[str, ...], **env: str) -> list[WorkerProcess]:
        """The workers of host `n`: its own data root (the staging folder), the recipe's environment."""
        root = tmp_path / f"host{n}"
        (root / "data").mkdir(parents=True, exist_ok=True)
        config = dataclasses.replace(self.config, data_root=root / "data", db_url=self.db_url)
        variables = worker_env(config, SWATH_STORAGE_URL=self.storage_url, SWATH_STORAGE_ENDPOINT=self.seaweed.endpoint,
                               SWATH_STORAGE_ACCESS_KEY_ID=ACCESS_KEY, SWATH_STORAGE_SECRET_ACCESS_KEY=SECRET_KEY,
                               **env)
        return [WorkerProcess(config=config, name=name, log_dir=root, env=variables) for name in names]

    def objects(self) -> dict[str, tuple[bytes, dict[str, str]]]:
        """Every object under the prefix: its bytes and user metadata, by its s3:// URL."""
        client = self.seaweed.client()
        listed = client.list_objects_v2(Bucket=self.bucket, Prefix="archive/").get("Contents", [])
        out = {}
        for item in listed:
            got = client.get_object(Bucket=self.bucket, Key=item["Key"])
            out[f"s3://{self.bucket}/{item['Key']}"] = (got["Body"].read(), got.get("Metadata") or {})
        return out


@pytest.fixture
def site(config, seaweed):
    with fresh_database() as url:
        yield Site(config=config, seaweed=seaweed, bucket=seaweed.new_bucket(), db_url=url)


def read_back(site: Site, tmp_path: Path, collected: Collector) -> dict[str, list[str]]:
    """The checks every test shares (module docstring); the items found in the bucket, by kind."""
    objects = site.objects()
    announced: dict[str, set[tuple[str, int, str]]] = collections.defaultdict(set)
    for body in collected.warcs():
        warc = body["warc"]
        announced[body["warc"]["id"]].add((warc["path"], warc["bytes"], warc["sha1"]))
    assert all(len(v) == 1 for v in announced.values()), {k: v for k, v in announced.items() if len(v) > 1}
    paths = {path: (size, sha1) for ((path, size, sha1),) in announced.values()}
    assert set(paths) == set(objects), "announced and stored WARCs differ"
    for url, (data, metadata) in objects.items():
        assert (len(data), hashlib.sha1(data).hexdigest()) == paths[url], url
        assert metadata["sha1"] == paths[url][1] and int(metadata[FENCE_METADATA]) >= 1, (url, metadata)
    downloaded = tmp_path / "bucket"
    downloaded.mkdir(exist_ok=True)
    files = []
    for n, (data, _) in enumerate(objects.values()):
        files.append(downloaded / f"{n}.warc.gz")
        files[-1].write_bytes(data)
    for host in sorted(tmp_path.glob("host*/data")):  # staging folders hold nothing once uploaded
        left = [p for p in host.rglob("*") if p.is_file() and ".warc" in p.name]
        assert left == [], left
    return items_in_warcs(files)


def fence_tokens(url: str, ids: list[str]) -> dict[str, int]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT harvest_id, token FROM harvest_claims WHERE harvest_id = ANY(:ids)"),
                            {"ids": ids}).all()
    engine.dispose()
    return dict(rows)  # type: ignore[arg-type]


def pages_start(api: ReliabilityApi, harvest_id: str, n: int) -> tuple[str, dict]:
    return "harvest.start.generic.generic_pages", {
        "id": harvest_id, "type": "generic_pages", "path": f"collections/s3/pages-{n}",
        "seeds": [{"id": "s1", "token": api.page_url(harvest_id)}], "credentials": {"api_key": GENERIC_SECRET},
        "collection_set": {"id": "s3"}, "collection": {"id": f"pages-{n}"}}


def tumblr_start(host: str, harvest_id: str, n: int) -> tuple[str, dict]:
    return "harvest.start.tumblr.tumblr_blog_posts", {
        "id": harvest_id, "type": "tumblr_blog_posts", "path": f"collections/s3/tumblr-{n}",
        "seeds": [{"id": f"seed-{host}", "uid": host}], "credentials": {"api_key": API_KEY},
        "collection_set": {"id": "s3"}, "collection": {"id": f"tumblr-{n}"}}


def stop_all(workers: list[WorkerProcess]) -> list[int | None]:
    return [w.stop() for w in workers]


def test_two_hosts_harvest_two_platforms_into_the_bucket_exactly_once(site, tmp_path):
    names = ("generic_harvester", "tumblr_harvester")
    blogs = build_blogs(counts={"blog0.example.org": 45, "blog1.example.org": 30}, seed=36)
    with FakeTumblr(blogs=blogs, page_delay=0.02) as tumblr, FakeServer() as server:
        site.config = dataclasses.replace(site.config.with_api_url("tumblr", tumblr.url), warc_max_bytes=6000)
        api = ReliabilityApi(server, pages=8, per_page=5, delay=0.02)
        declare_queues(site.config, names)
        workers = site.host(tmp_path, 0, names) + site.host(tmp_path, 1, names)
        starts = [pages_start(api, f"s3a:pages:{n}:{tmp_path.name[-6:]}", n) for n in range(4)]
        starts += [tumblr_start(host, f"s3a:tumblr:{n}:{tmp_path.name[-6:]}", n) for n, host in enumerate(blogs)]
        ids = [body["id"] for _, body in starts]
        try:
            with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got, \
                    Publisher(config=site.config) as requester:
                for worker in workers:
                    worker.start()
                assert got.wait(lambda: all(w.ready() for w in workers), WAIT), "workers attached"
                for key, body in starts:
                    requester.publish(key, body).result(120)
                assert got.wait(lambda: set(ids) <= set(got.finals()), WAIT), "every final status"
                got.drained()
                finals = got.finals()
                served_posts = [p["id_string"] for body in tumblr.bodies("/v2/blog/")
                                for p in json.loads(body)["response"]["posts"]]
        finally:
            exits = stop_all(workers)
    assert exits == [0] * len(workers), [w.log_text()[-3000:] for w in workers]
    for harvest_id in ids:
        assert [f["status"] for f in finals[harvest_id]] == ["completed success"], finals[harvest_id]
    found = read_back(site, tmp_path, got)
    served_pages = [i for key in api.served.items for i in api.served.items[key]]
    assert sorted(found["pages"]) == sorted(served_pages) and len(served_pages) == 4 * 8 * 5
    assert sorted(found["tumblr"]) == sorted(served_posts) and set(served_posts) == {
        p["id_string"] for blog in blogs.values() for p in blog.posts}
    assert all("uploading" in w.log_text() for w in workers if w.name == "generic_harvester" and
               w.config.data_root.joinpath("collections").exists())
    assert set(fence_tokens(site.db_url, ids).values()) == {1}  # each harvest claimed once, by one host
    print(f"(a) items served {len(served_pages)} pages + {len(served_posts)} posts; found in objects "
          f"{len(found['pages'])} + {len(found['tumblr'])}; objects verified {len(site.objects())}")


def test_kill_9_of_a_host_mid_upload_the_other_finishes_exactly_once(site, tmp_path):
    pages, per_page = 40, 5
    site.config = dataclasses.replace(site.config, warc_max_bytes=3000)
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=pages, per_page=per_page, delay=0.05)
        killed = threading.Event()

        def gated(request):  # past page 20 the fake waits for the kill: host 0 cannot finish before it
            if int(request.arg("page", "1")) > 20:
                killed.wait(WAIT)
            return api.page(request)

        server.route("/pages")(gated)
        declare_queues(site.config, ["generic_harvester"])
        first, second = site.host(tmp_path, 0, ("generic_harvester",)) + site.host(tmp_path, 1, ("generic_harvester",))
        harvest_id = f"s3b:{tmp_path.name[-6:]}"
        try:
            with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got, \
                    Publisher(config=site.config) as requester:
                first.start()
                assert got.wait(first.ready, WAIT), "host 0 attached"
                requester.publish(*pages_start(api, harvest_id, 0)).result(120)
                # the third upload has begun on host 0 (two WARCs before it are stored and committed)
                assert got.wait(lambda: first.log_text().count(UPLOADING) >= 3, WAIT), "host 0 uploading"
                second.start()
                assert got.wait(second.ready, WAIT), "host 1 attached"
                first.kill9()  # the broker hands the unacked start to host 1; PostgreSQL frees the claim
                killed.set()
                assert got.wait(lambda: harvest_id in got.finals(), WAIT), "final status after the kill"
                got.drained()
                finals = got.finals()[harvest_id]
        finally:
            killed.set()
            exits = stop_all([first, second])
    assert exits[1] == 0, second.log_text()[-4000:]
    assert [f["status"] for f in finals] == ["completed success"], finals
    assert "harvest_resumed" in [w["code"] for w in finals[0]["warnings"]]
    # host 0 died with what it was uploading in its own staging folder: not the other host's to see; the store's
    # committed serial makes its rerun (if ever) drop it. The checks below are about the store and host 1.
    for leftover in (tmp_path / "host0" / "data").rglob("*.warc*"):
        leftover.unlink()
    found = read_back(site, tmp_path, got)
    served = api.served.items[harvest_id]
    counts = collections.Counter(found["pages"])
    assert set(counts) == set(served) and len(served) >= pages * per_page, "an item served is in no object"
    assert set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1]
    assert fence_tokens(site.db_url, [harvest_id]) == {harvest_id: 2}  # host 0's run, then host 1's
    removed = [w["message"] for w in finals[0]["warnings"] if "uploaded by a run that ended" in w["message"]]
    print(f"(b) items served {len(served)} (unique {len(set(served))}); found in objects {len(found['pages'])}; "
          f"objects verified {len(site.objects())}; uncommitted objects of the killed host removed: {len(removed)}")


@pytest.mark.slow  # 30-100 s: with its volume server gone the gateway answers an upload only after ~30 s, 3 tries
@pytest.mark.timeout(1200)
def test_volume_server_lost_mid_harvest_keeps_the_warc_and_the_rerun_uploads_it_first(config, tmp_path):
    """One host (the fault is the store's): the volume server stops while the harvest runs, the upload fails after
    its retries (storage_unavailable, WARC kept in the staging folder), the volume comes back and the start,
    delivered again, uploads the kept WARC first and finishes."""
    pages, per_page = 20, 5
    weed = Seaweed.start(tmp_path / "weed")
    try:
        with fresh_database() as url, FakeServer() as server:
            site = Site(config=dataclasses.replace(config, warc_max_bytes=3000), seaweed=weed,
                        bucket=weed.new_bucket(), db_url=url)
            api = ReliabilityApi(server, pages=pages, per_page=per_page, delay=0.02)
            gate = threading.Event()

            def gated(request):  # past page 6 the fake waits until the volume server is down
                if int(request.arg("page", "1")) > 6:
                    gate.wait(WAIT)
                return api.page(request)

            server.route("/pages")(gated)
            declare_queues(site.config, ["generic_harvester"])
            (worker,) = site.host(tmp_path, 0, ("generic_harvester",), SWATH_HTTP_RETRIES="2",
                                  SWATH_HTTP_BACKOFF="0.2")
            harvest_id = f"s3c:{tmp_path.name[-6:]}"
            try:
                with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got, \
                        Publisher(config=site.config) as requester:
                    worker.start()
                    assert got.wait(worker.ready, WAIT), "worker attached"
                    requester.publish(*pages_start(api, harvest_id, 0)).result(120)
                    assert got.wait(lambda: len(got.warcs()) >= 1, WAIT), "a first WARC stored and announced"
                    weed.stop_volume()
                    gate.set()
                    assert got.wait(lambda: harvest_id in got.finals(), 3 * WAIT), "a status once the store failed"
                    first = got.finals()[harvest_id][0]
                    kept = [p for p in site_root(tmp_path).rglob("*.warc.gz")]
                    weed.start_volume()
                    requester.publish(*pages_start(api, harvest_id, 0)).result(120)  # the rerun
                    assert got.wait(lambda: len(got.finals()[harvest_id]) >= 2, WAIT), "the rerun's final status"
                    got.drained()
                    finals = got.finals()[harvest_id]
            finally:
                exit_code = worker.stop()
            assert exit_code == 0, worker.log_text()[-4000:]
            assert first["status"] == "completed failure", first
            assert [e["code"] for e in first["errors"]] == ["storage_unavailable"], first["errors"]
            assert kept, "the WARC that could not go up stayed in the staging folder"
            assert [f["status"] for f in finals] == ["completed failure", "completed success"], finals
            found = read_back(site, tmp_path, got)
            served = api.served.items[harvest_id]
            counts = collections.Counter(found["pages"])
            assert set(counts) == set(served) and set(counts.values()) == {1}
            assert len(found["pages"]) == pages * per_page
            print(f"(c) items served {len(served)} (unique {len(set(served))}); found in objects "
                  f"{len(found['pages'])}; objects verified {len(site.objects())}; kept locally over the outage "
                  f"{len(kept)} WARC(s)")
    finally:
        weed.stop()


def site_root(tmp_path: Path) -> Path:
    return tmp_path / "host0" / "data"


def test_a_stale_runners_late_upload_is_refused_and_each_object_carries_its_token(site, tmp_path):
    """Runner A's store session is dropped (as when its host goes silent) and runner B takes the harvest: A's next
    upload is refused before anything reaches the bucket, and its state commit is refused with claim_fenced."""
    from swath.core.objects import store_for
    from swath.harvesters.claims import ClaimLost
    from swath.harvesters.uploads import WarcUploader, storage_retry
    from swath.harvesters.warc import ClosedWarc
    from swath.messages import codes
    from swath.store.harvest_state import PgCoordination

    config = dataclasses.replace(site.config, data_root=tmp_path / "a", db_url=site.db_url,
                                 storage_url=site.storage_url, storage_endpoint=site.seaweed.endpoint,
                                 storage_access_key_id=ACCESS_KEY, storage_secret_access_key=SECRET_KEY)
    harvest_id = f"stale:{tmp_path.name[-6:]}"
    directory = config.harvest_base / "collections" / "stale"
    directory.mkdir(parents=True)
    coordination = PgCoordination(config=config)
    stale = coordination.claim(harvest_id, instance="a")
    assert stale.try_acquire()
    state = coordination.state(directory=directory, claim=stale)
    uploader = WarcUploader(store=store_for(config, retry=storage_retry(config)), base=config.harvest_base.resolve(),
                            directory=directory.resolve(), harvest_id=harvest_id, fence=stale.check,
                            fence_token=stale.token)

    def warc(serial: int) -> ClosedWarc:
        path = directory / f"{harvest_id.replace(':', '_')}-20261127T070000Z-{serial:05d}.warc.gz"
        path.write_bytes(f"WARC bytes {serial}".encode() * 100)
        return ClosedWarc.of(path, harvest_id)

    first = uploader.upload(warc(0), {"since": 1}, state.commit)
    assert first.url in site.objects() and site.objects()[first.url][1][FENCE_METADATA] == str(stale.token)
    admin = create_engine(site.db_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:  # the server drops A's session, and its advisory lock with it
        conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = :name"),
                     {"name": f"swath claim {harvest_id}"[:63]})
    admin.dispose()
    fresh = coordination.claim(harvest_id, instance="b")
    assert fresh.acquire(give_up=threading.Event()) and fresh.token == 2
    late = warc(1)
    with pytest.raises(ClaimLost):
        uploader.upload(late, {"since": 2}, state.commit)
    assert set(site.objects()) == {first.url} and late.path.exists()  # nothing went up; the file is kept
    with pytest.raises(ClaimLost) as refused:
        state.commit({"since": 2})
    assert getattr(refused.value, "code", None) == codes.CLAIM_FENCED
    assert coordination.state(directory=directory, claim=fresh).get("since") == 1
    fresh.release()
    coordination.engine.dispose()


def test_an_object_a_dead_run_uploaded_but_never_committed_is_removed_and_its_items_fetched_once(site, tmp_path):
    """The window kill -9 may or may not hit: the object is in the bucket, its state commit is not. Made here on
    purpose: a run interrupted after two committed WARCs, then an object with the next serial put beside them
    (a copy of a stored one: items the store's state does not count). The next run removes it, says so, and
    fetches its data again: each item once in the bucket."""
    from swath.core.jobs import JobInterrupted
    from swath.harvesters.run import run_harvest
    from swath.store.harvest_state import PgCoordination
    from tests.enginekit import PagedApi, context, page_item_ids, routing_key, start_message, wait_for, warc_files

    pages, per_page = 30, 5
    hosts = [tmp_path / "host0" / "data", tmp_path / "host1" / "data"]
    configs = [dataclasses.replace(site.config, data_root=root, db_url=site.db_url, warc_max_bytes=2500,
                                   storage_url=site.storage_url, storage_endpoint=site.seaweed.endpoint,
                                   storage_access_key_id=ACCESS_KEY, storage_secret_access_key=SECRET_KEY)
               for root in hosts]
    harvest_id = f"orphan:{tmp_path.name[-6:]}"
    client = site.seaweed.client()
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.01)
        interrupted = threading.Event()

        def gated(request):  # past page 12 the fake waits for the shutdown: the first run cannot finish before it
            if int(request.arg("page", "1")) > 12:
                interrupted.wait(WAIT)
            return api.handle(request)

        server.route("/pages")(gated)
        message = start_message(server.url + "/pages", harvest_id=harvest_id, path="coll")
        ctx, first = context(configs[0])
        errors: list[BaseException] = []

        def run() -> None:
            try:
                run_harvest(message, routing_key=routing_key(), ctx=ctx, coordination=PgCoordination(config=configs[0]))
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for(lambda: len(first.warcs) >= 2, what="two WARCs stored and announced by host 0")
        finally:
            ctx.shutdown.set()
            interrupted.set()
        thread.join(120)
        assert len(errors) == 1 and isinstance(errors[0], JobInterrupted), errors
        stored = sorted(site.objects())
        last = stored[-1].removeprefix(f"s3://{site.bucket}/")
        serial = int(last[-len("00000.warc.gz"):-len(".warc.gz")])
        orphan = f"{last[:-len('00000.warc.gz')]}{serial + 1:05d}.warc.gz"
        client.copy_object(Bucket=site.bucket, Key=orphan, CopySource={"Bucket": site.bucket, "Key": last},
                           MetadataDirective="COPY")
        ctx, second = context(configs[1])
        run_harvest(message, routing_key=routing_key(), ctx=ctx, coordination=PgCoordination(config=configs[1]))
    final = second.statuses[-1]
    assert final["status"] == "completed success", final["errors"]
    removed = [w["message"] for w in final["warnings"] if w["code"] == "warc_recovered"]
    assert len(removed) == 1 and orphan.rpartition("/")[2] in removed[0], final["warnings"]
    objects = site.objects()
    assert f"s3://{site.bucket}/{orphan}" not in {w["warc"]["path"] for w in second.warcs} or \
        objects[f"s3://{site.bucket}/{orphan}"][0] != objects[stored[-1]][0]  # a new WARC may take its serial
    downloaded = tmp_path / "bucket"
    downloaded.mkdir()
    for n, (data, _) in enumerate(objects.values()):
        (downloaded / f"{n}.warc.gz").write_bytes(data)
    assert sorted(page_item_ids(warc_files(downloaded))) == list(range(pages * per_page))  # each item once
    assert {w["warc"]["path"] for w in second.warcs} == set(objects)
    assert warc_files(hosts[0]) == warc_files(hosts[1]) == []


@pytest.mark.reliability  # its own 3-node RabbitMQ cluster, as tests/test_cluster.py: 38 s here, more under load
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not clusters.available(), reason="Debian's rabbitmq-server is not installed")
def test_losing_the_rabbitmq_node_that_leads_the_harvest_queue_with_object_storage(site, tmp_path, swath_seed):
    """tests/test_cluster.py's node loss (harvests only: reading WARCs back from the bucket for exports is another
    branch's) with three harvester hosts, each its own data root, WARCs to the bucket, claims in PostgreSQL."""
    rng = random.Random(swath_seed)
    harvests = 6
    blogs = build_blogs(counts={f"blog{i}.example.org": rng.randrange(30, 80) for i in range(harvests)},
                        seed=swath_seed)
    nodes = clusters.Cluster(tmp_path / "cluster").start()
    try:
        with FakeTumblr(blogs=blogs, page_delay=0.3) as tumblr:
            site.config = dataclasses.replace(site.config.with_api_url("tumblr", tumblr.url),
                                              amqp_url=nodes.url_list(0), warc_max_seconds=1.0, http_retries=8,
                                              http_backoff=0.2, http_timeout=20.0)
            queue = site.config.queue_prefix + "tumblr_harvester"
            declare_queues(site.config, ["tumblr_harvester"])
            workers = []
            for n in range(3):  # each host starts with another node; every one knows all three
                (worker,) = site.host(tmp_path, n, ("tumblr_harvester",), SWATH_AMQP_URL=nodes.url_list(n))
                workers.append(worker)
            starts = [tumblr_start(host, f"s3d:{n}:{tmp_path.name[-6:]}", n) for n, host in enumerate(blogs)]
            ids = [body["id"] for _, body in starts]
            lost = None
            try:
                with Collector(config=site.config, queue=site.config.queue_prefix + "requester") as got:
                    for worker in workers:
                        worker.start()
                    assert got.wait(lambda: all(w.ready() for w in workers), WAIT), "hosts attached"
                    with Publisher(config=site.config) as requester:
                        for key, body in starts:
                            requester.publish(key, body).result(120)
                    deadline = time.monotonic() + 600
                    while time.monotonic() < deadline and not set(ids) <= set(got.finals()):
                        running = {b["id"] for b in got.statuses() if b["id"] in ids}
                        if lost is None and len(running) >= 3:  # each host busy, the rest wait: lose the leader
                            lost = nodes.leader(queue)
                            nodes.kill(lost)
                        time.sleep(0.2)
                    assert set(ids) <= set(got.finals()), [w.log_text()[-2000:] for w in workers]
                    got.drained()
                    finals = got.finals()
            finally:
                exits = stop_all(workers)
            served_posts = [p["id_string"] for body in tumblr.bodies("/v2/blog/")
                            for p in json.loads(body)["response"]["posts"]]
    finally:
        nodes.stop()
    assert lost is not None
    assert exits == [0, 0, 0], [w.log_text()[-3000:] for w in workers]
    for harvest_id in ids:  # ended exactly once (a redelivered, finished harvest repeats the same message)
        assert {f["status"] for f in finals[harvest_id]} == {"completed success"}, finals[harvest_id]
    found = read_back(site, tmp_path, got)
    counts = collections.Counter(found["tumblr"])
    every = {p["id_string"] for blog in blogs.values() for p in blog.posts}
    assert set(counts) == every and set(counts.values()) == {1}, [i for i, c in counts.items() if c > 1]
    print(f"(d) lost {lost.name}; posts served {len(served_posts)} (unique {len(set(served_posts))}); found in "
          f"objects {len(found['tumblr'])}; objects verified {len(site.objects())}")
