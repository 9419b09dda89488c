"""A runner that lost its claim writes nothing more (issue 36; tests/objectstoragekit.py's bucket and store): each
object carries its run's fencing token and a stale runner's late upload and state commit are refused
(claim_fenced); an object a dead run uploaded but never committed is removed by the next run, which fetches its
items again, so each item is in the bucket once."""

from __future__ import annotations

import threading

import pytest
from sqlalchemy import create_engine, text

from swath.core.objects_base import FENCE_METADATA
from tests.fakes.httpserver import FakeServer
from tests.objectstoragekit import WAIT, as_files, pg_url, site  # noqa: F401  (pg_url, site: fixtures)


def test_a_stale_runners_late_upload_is_refused_and_each_object_carries_its_token(site, tmp_path):
    """Runner A's store session is dropped (as when its host goes silent) and runner B takes the harvest: A's next
    upload is refused before anything reaches the bucket, and its state commit is refused with claim_fenced."""
    from swath.core.objects import store_for
    from swath.harvesters.claims import ClaimLost
    from swath.harvesters.uploads import WarcUploader, storage_retry
    from swath.harvesters.warc import ClosedWarc
    from swath.messages import codes
    from swath.store.harvest_state import PgCoordination

    config = site.host_config(tmp_path / "a")
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
    configs = [site.host_config(root, warc_max_bytes=2500) for root in hosts]
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
    downloaded = as_files((data for data, _ in objects.values()), tmp_path / "bucket")
    assert sorted(page_item_ids(downloaded)) == list(range(pages * per_page))  # each item once
    assert {w["warc"]["path"] for w in second.warcs} == set(objects)
    assert warc_files(hosts[0]) == warc_files(hosts[1]) == []
