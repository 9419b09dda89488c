"""Harvests with SWATH_STORAGE_URL=s3://...: WARCs uploaded, checked, then announced and removed locally; a store
that fails keeps them on disk for the next run, which uploads them first (harvesters/uploads.py). Against a real
SeaweedFS (tests/seaweed.py) and the fake paged API of the engine tests."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import re

from warcio.archiveiterator import ArchiveIterator

from swath.harvesters.coordination import LocalFiles
from swath.harvesters.run import run_harvest as engine_run
from swath.harvesters.uploads import COMMIT_SUFFIX
from swath.harvesters.warc import name_pattern
from swath.messages import codes
from swath.store.harvest_state import PgCoordination
from tests.enginekit import PagedApi, context, routing_key, start_message, warc_files
from tests.fakes.httpserver import FakeServer
from tests.requesterkit import pg_url  # noqa: F401  (fixture)
from tests.seaweed import ACCESS_KEY, SECRET_KEY, Seaweed


def run_harvest(message, *, routing_key, ctx) -> None:
    """One harvest in this process: a flock claim and the state file suffice (one runner, one data root); the
    worker services keep both in PostgreSQL instead (swath/harvest_job.py, tests/test_object_storage_faults.py)."""
    engine_run(message, routing_key=routing_key, ctx=ctx, coordination=LocalFiles(ctx.config.data_root))


def _bucket_and_prefix(config):
    bucket, _, prefix = config.storage_url.removeprefix("s3://").partition("/")
    return bucket, prefix


def _objects(seaweed, config) -> dict[str, bytes]:
    """Every object under the store's prefix, by its s3:// URL."""
    client, (bucket, prefix) = seaweed.client(), _bucket_and_prefix(config)
    listed = client.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", [])
    return {f"s3://{bucket}/{o['Key']}": client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            for o in listed}


def _item_ids(data: bytes) -> list[int]:
    """The ids of the items in the API responses a WARC recorded."""
    ids = []
    for record in ArchiveIterator(io.BytesIO(data)):
        if record.rec_type == "response":
            ids.extend(item["id"] for item in json.loads(record.content_stream().read())["items"])
    return ids


def _check_stored(published, objects, seaweed, config) -> None:
    """Every WARC announced is in the bucket with its size and SHA-1 (also in the object's metadata), under the
    key its local path had; nothing in the bucket was left unannounced."""
    client, (bucket, prefix) = seaweed.client(), _bucket_and_prefix(config)
    announced = {w["warc"]["path"]: w["warc"] for w in published.warcs}
    assert set(announced) == set(objects)
    for url, warc in announced.items():
        data = objects[url]
        assert (len(data), hashlib.sha1(data).hexdigest()) == (warc["bytes"], warc["sha1"])
        key = url.removeprefix(f"s3://{bucket}/")
        assert client.head_object(Bucket=bucket, Key=key)["Metadata"]["sha1"] == warc["sha1"]
        folders, _, name = key.rpartition("/")
        # the folder layout under the data root, one to one: <path>/YYYY/MM/DD/HH/<harvest>-<stamp>-<serial>
        assert re.fullmatch(rf"{prefix}/coll/\d{{4}}/\d{{2}}/\d{{2}}/\d{{2}}", folders), key
        assert name_pattern("test:1").fullmatch(name), key
        gzip.decompress(data)  # whole


def test_a_harvest_uploads_every_warc_announces_it_and_keeps_none_locally(s3_config, seaweed, data_root):
    config = dataclasses.replace(s3_config, warc_max_bytes=3000)  # several WARCs
    with FakeServer() as server:
        api = PagedApi(server, pages=12, per_page=5, delay=0.05)
        ctx, published = context(config)
        run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    assert published.statuses[-1]["status"] == "completed success", published.statuses[-1]
    objects = _objects(seaweed, config)
    assert len(objects) == len(published.warcs) == published.statuses[-1]["warcs"]["count"]
    assert len(objects) > 1
    _check_stored(published, objects, seaweed, config)
    assert sorted(i for data in objects.values() for i in _item_ids(data)) == sorted(api.served)
    assert warc_files(data_root) == [] and list(data_root.rglob(f"*{COMMIT_SUFFIX}")) == []


def test_a_store_without_its_volume_server_keeps_the_warc_and_the_rerun_uploads_it_first(config, data_root, tmp_path):
    seaweed = Seaweed.start(tmp_path / "seaweed")  # its own: this test stops it
    try:
        bucket = seaweed.new_bucket()
        s3 = dataclasses.replace(config, storage_url=f"s3://{bucket}/archive", storage_endpoint=seaweed.endpoint,
                                 storage_access_key_id=ACCESS_KEY, storage_secret_access_key=SECRET_KEY,
                                 http_retries=1, http_backoff=0.05, http_timeout=5)
        with FakeServer() as server:
            api = PagedApi(server, pages=4, per_page=5)
            message = start_message(server.url + "/pages")
            seaweed.stop_volume()  # the gateway and filer answer (listings work); the bytes cannot be stored
            ctx, first = context(s3)
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
            final = first.statuses[-1]
            assert final["status"] == "completed failure"
            assert [e["code"] for e in final["errors"]] == [codes.STORAGE_UNAVAILABLE]
            assert SECRET_KEY not in json.dumps(first.messages)
            assert first.warcs == []  # nothing announced that is not in the bucket
            kept = warc_files(data_root)
            assert len(kept) == 1 and kept[0].with_name(kept[0].name + COMMIT_SUFFIX).exists()
            kept_sha1 = hashlib.sha1(kept[0].read_bytes()).hexdigest()
            served = list(api.served)

            seaweed.start_volume()
            seaweed.wait_ready()
            ctx, second = context(s3)
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
        assert second.statuses[-1]["status"] == "completed success", second.statuses[-1]
        assert api.served == served  # the kept WARC held everything: its commit says the harvest got to its end
        objects = _objects(seaweed, s3)
        assert [w["warc"]["sha1"] for w in second.warcs] == [kept_sha1]  # uploaded and announced once
        _check_stored(second, objects, seaweed, s3)
        assert sorted(_item_ids(next(iter(objects.values())))) == sorted(served)
        assert warc_files(data_root) == [] and list(data_root.rglob(f"*{COMMIT_SUFFIX}")) == []
    finally:
        seaweed.stop()


def test_refused_credentials_end_the_harvest_before_it_begins_resumably(s3_config, data_root):
    config = dataclasses.replace(s3_config, storage_secret_access_key="wrong-" + SECRET_KEY[::-1])
    with FakeServer() as server:
        api = PagedApi(server, pages=2, per_page=5)
        ctx, published = context(config)
        run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    final = published.statuses[-1]
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == [codes.STORAGE_REFUSED]
    assert config.storage_secret_access_key not in json.dumps(published.messages)
    assert api.served == [] and published.warcs == [] and warc_files(data_root) == []
    ctx, again = context(s3_config)  # the keys fixed: the start delivered again runs (the failure was not final)
    with FakeServer() as server:
        api = PagedApi(server, pages=2, per_page=5)
        run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    assert again.statuses[-1]["status"] == "completed success"
    assert sorted(i for w in again.warcs for i in _item_ids(_objects_of(s3_config, w))) == sorted(api.served)


def test_a_redelivered_start_whose_final_status_was_lost_reports_the_stored_warcs(s3_config, seaweed, data_root):
    class BrokerGone(Exception):
        pass

    def publish_until_final(routing_key, body):
        if body.get("status") in ("completed success", "completed failure"):
            raise BrokerGone
        first(routing_key, body)

    with FakeServer() as server:
        api = PagedApi(server, pages=3, per_page=2)
        message = start_message(server.url + "/pages")
        _ctx, first = context(s3_config)
        try:
            run_harvest(message, routing_key=routing_key(), ctx=dataclasses.replace(_ctx, publish=publish_until_final))
        except BrokerGone:
            pass
        served = list(api.served)
        ctx, second = context(s3_config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    assert api.served == served and second.kinds()[-1] == "completed success"
    fields = ("path", "sha1", "bytes", "id", "date_created")  # (record dates are not kept with a WARC, as on disk)
    assert [[w["warc"][f] for f in fields] for w in second.warcs] == [[w["warc"][f] for f in fields]
                                                                      for w in first.warcs]  # from the store
    _check_stored(second, _objects(seaweed, s3_config), seaweed, s3_config)


def _objects_of(config, warc_created) -> bytes:
    """One announced WARC's bytes, read back from the store through swath's own interface."""
    from swath.core.objects import store_for
    from swath.harvesters.uploads import storage_retry

    store = store_for(config, retry=storage_retry(config))
    key = warc_created["warc"]["path"].removeprefix(config.storage_url + "/")
    return store.read_range(key, 0, warc_created["warc"]["bytes"])


def test_the_volume_server_stopped_mid_harvest_then_the_rerun_completes_it(config, data_root, tmp_path):
    """The fault of issue 36's tests at engine level: the store loses its volume server after the first WARC went
    up; later WARCs stay on disk with their commits; the rerun uploads them in order and finishes the harvest."""
    import threading

    seaweed = Seaweed.start(tmp_path / "seaweed")
    try:
        bucket = seaweed.new_bucket()
        s3 = dataclasses.replace(config, storage_url=f"s3://{bucket}/archive", storage_endpoint=seaweed.endpoint,
                                 storage_access_key_id=ACCESS_KEY, storage_secret_access_key=SECRET_KEY,
                                 http_retries=1, http_backoff=0.05, http_timeout=5, warc_max_bytes=2500)
        pages, per_page = 30, 5
        with FakeServer() as server:
            api = PagedApi(server, pages=pages, per_page=per_page, delay=0.02)
            stopped = threading.Event()

            def gated(request):  # past page 10 the fake waits until the volume server is gone
                if int(request.arg("page", "1")) > 10:
                    stopped.wait(120)
                return api.handle(request)

            server.route("/pages")(gated)
            message = start_message(server.url + "/pages")
            _ctx, first = context(s3)

            def publish(routing_key, body):
                first(routing_key, body)
                if routing_key == "warc_created" and not stopped.is_set():
                    seaweed.stop_volume()
                    stopped.set()

            run_harvest(message, routing_key=routing_key(), ctx=dataclasses.replace(_ctx, publish=publish))
            assert stopped.is_set()
            assert [e["code"] for e in first.statuses[-1]["errors"]] == [codes.STORAGE_UNAVAILABLE]
            kept = warc_files(data_root)
            assert kept and all(p.with_name(p.name + COMMIT_SUFFIX).exists() for p in kept)
            kept_sha1 = [hashlib.sha1(p.read_bytes()).hexdigest() for p in kept]

            seaweed.start_volume()
            seaweed.wait_ready()
            ctx, second = context(s3)
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
        final = second.statuses[-1]
        assert final["status"] == "completed success", final
        objects = _objects(seaweed, s3)
        _check_stored(second, objects, seaweed, s3)  # the earlier, the kept and the new WARCs, each in the store
        announced = [w["warc"]["sha1"] for w in second.warcs]
        assert len(announced) == len(set(announced)) and set(kept_sha1) <= set(announced)
        assert {w["warc"]["path"] for w in first.warcs} <= set(objects)
        recorded = [i for data in objects.values() for i in _item_ids(data)]
        assert set(recorded) == set(range(pages * per_page))  # nothing lost (a re-fetched page may repeat)
        assert sum(day.get("items", 0) for day in final["stats"].values()) == pages * per_page
        assert warc_files(data_root) == [] and list(data_root.rglob(f"*{COMMIT_SUFFIX}")) == []
    finally:
        seaweed.stop()


def test_kill_9_mid_harvest_then_the_rerun_uploads_what_was_left_and_finishes(s3_config, seaweed, data_root,
                                                                              tmp_path, pg_url):  # noqa: F811
    """A worker killed while it writes and uploads: whatever it left (closed WARCs with or without their commit, an
    .open one) goes up first in the rerun; the store then holds every item, each announced WARC once."""
    import os
    import signal
    import subprocess
    import sys
    import threading
    from pathlib import Path

    from tests.enginekit import wait_for

    root = Path(__file__).resolve().parents[1]
    pages, per_page = 60, 5
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.02)
        killed = threading.Event()

        def gated(request):  # past page 30 the fake waits for the kill
            if int(request.arg("page", "1")) > 30:
                killed.wait(240)
            return api.handle(request)

        server.route("/pages")(gated)
        message = start_message(server.url + "/pages", harvest_id="sfmui:78")
        message_file = tmp_path / "start.json"
        message_file.write_text(json.dumps(message))
        env = dict(os.environ, SWATH_DATA_ROOT=str(data_root), SWATH_WARC_MAX_BYTES="2500", PYTHONPATH=str(root),
                   SWATH_STORAGE_URL=s3_config.storage_url, SWATH_STORAGE_ENDPOINT=s3_config.storage_endpoint,
                   SWATH_STORAGE_ACCESS_KEY_ID=ACCESS_KEY, SWATH_STORAGE_SECRET_ACCESS_KEY=SECRET_KEY)
        # `swath harvest run` with object storage keeps the claim and state in PostgreSQL (swath/harvest_job.py)
        env["SWATH_DB_URL"] = pg_url
        proc = subprocess.Popen([sys.executable, "-m", "swath", "harvest", "run", str(message_file)], cwd=root,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: len(_objects(seaweed, s3_config)) >= 2 and len(api.served) >= 20 * per_page,
                     what="two WARCs in the store and 20 pages served")
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=120)
            killed.set()
        out, err = proc.communicate(timeout=120)
        assert SECRET_KEY.encode() not in out + err
        before = [json.loads(line)["message"] for line in out.splitlines()]
        assert all(m["warc"]["path"].startswith("s3://") for m in before if "warc" in m)
        assert len(api.served) < pages * per_page  # it really was cut short
        leftovers = list(data_root.rglob("*.open"))

        pg_config = dataclasses.replace(s3_config, db_url=pg_url)
        ctx, published = context(pg_config)
        engine_run(message, routing_key=routing_key(), ctx=ctx, coordination=PgCoordination(config=pg_config))
    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    objects = _objects(seaweed, s3_config)
    announced = {w["warc"]["path"]: w["warc"] for w in published.warcs}
    assert set(announced) == set(objects) and len(announced) == len(published.warcs)  # each once
    for url, warc in announced.items():
        assert (len(objects[url]), hashlib.sha1(objects[url]).hexdigest()) == (warc["bytes"], warc["sha1"])
    assert {m["warc"]["path"] for m in before if "warc" in m} <= set(objects)
    recorded = [i for data in objects.values() for i in _item_ids(data)]
    assert set(recorded) == set(range(pages * per_page))  # nothing lost (a re-fetched page may repeat)
    assert sum(day.get("items", 0) for day in final["stats"].values()) == pages * per_page
    assert warc_files(data_root) == [] and list(data_root.rglob(f"*{COMMIT_SUFFIX}")) == []
    assert list(data_root.rglob("*.open")) == []
    warnings = [w["code"] for w in final["warnings"]]
    assert (codes.WARC_RECOVERED in warnings) == bool(leftovers)  # a cut WARC was closed and went up too
