"""Resume: kill -9 mid-harvest then the redelivered start finishes it, losing and corrupting nothing;
a graceful shutdown leaves a resumable harvest too."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from swath.core.jobs import JobInterrupted
from swath.harvesters.run import run_harvest
from swath.messages import codes
from tests.enginekit import (
    SECRET,
    PagedApi,
    context,
    page_item_ids,
    raw_bytes,
    routing_key,
    start_message,
    wait_for,
    warc_files,
    warcio_check,
)
from tests.fakes.httpserver import FakeServer

ROOT = Path(__file__).resolve().parents[1]


def _check_resumed_run(published, data_root: Path, api: PagedApi, total_items: int) -> None:
    final = published.statuses[-1]
    assert final["status"] == "completed success"
    assert codes.HARVEST_RESUMED in [w["code"] for w in final["warnings"]]
    assert not list(data_root.rglob("*.open"))
    files = warc_files(data_root)
    assert warcio_check(files).returncode == 0, warcio_check(files).stdout
    reported = [w["warc"]["path"] for w in published.warcs]
    assert sorted(reported) == [str(p) for p in files]  # earlier WARCs reported again, nothing .open
    assert final["warcs"] == {"count": len(files), "bytes": sum(p.stat().st_size for p in files)}
    recorded = page_item_ids(files)
    assert set(recorded) == set(range(total_items))  # nothing lost (re-fetched pages may repeat)
    counted = sum(day.get("items", 0) for day in final["stats"].values())
    assert counted == total_items, "stats count each item once across the interrupted and the resumed run"
    assert SECRET.encode() not in raw_bytes(files)


def test_kill_9_mid_harvest_then_resume_loses_and_corrupts_nothing(config, data_root, tmp_path):
    pages, per_page = 60, 5
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.02)
        killed = threading.Event()

        def gated(request):  # past page 30 the fake waits for the kill: cut short however fast the harvest runs
            if int(request.arg("page", "1")) > 30:
                killed.wait(240)
            return api.handle(request)

        server.route("/pages")(gated)
        message = start_message(server.url + "/pages", harvest_id="sfmui:77")
        message_file = tmp_path / "start.json"
        message_file.write_text(json.dumps(message))
        env = dict(os.environ, SWATH_DATA_ROOT=str(data_root), SWATH_WARC_MAX_BYTES="2500",
                   SWATH_STATUS_INTERVAL="0.5", PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, "-m", "swath.harvesters.embedded", str(message_file)], cwd=ROOT,
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            wait_for(lambda: len(warc_files(data_root)) >= 2 and len(api.served) >= 20 * per_page,
                     what="two WARCs and 20 pages served by the embedded harvest")
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=120)
            killed.set()  # the gated requests answer a dead client
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == -signal.SIGKILL
        assert SECRET.encode() not in out + err
        before = [json.loads(line) for line in out.splitlines()]
        assert all(not m["message"]["warc"]["path"].endswith(".open")
                   for m in before if m["routing_key"] == "warc_created")
        assert len(api.served) < pages * per_page  # it really was cut short
        leftovers = list(data_root.rglob("*.open"))

        requests_before = len(server.requests)
        ctx, published = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)

    _check_resumed_run(published, data_root, api, pages * per_page)
    warnings = [w["code"] for w in published.statuses[-1]["warnings"]]
    assert (codes.WARC_RECOVERED in warnings) == bool(leftovers)
    # the committed cursor let the resumed run skip the pages of the completed WARCs
    first_resumed = server.requests[requests_before]
    assert int(first_resumed.query.get("page", ["1"])[0]) > 1


def test_shutdown_interrupts_and_the_redelivery_resumes(config, data_root):
    pages, per_page = 40, 5
    config = dataclasses.replace(config, warc_max_bytes=2500)
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.01)
        message = start_message(server.url + "/pages", harvest_id="h-42")
        ctx, published = context(config)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                run_harvest(message, routing_key=routing_key(), ctx=ctx)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for(lambda: len(api.served) >= 10 * per_page, what="10 pages served")
        finally:
            ctx.shutdown.set()
            ctx.stop.set()
        thread.join(120)
        assert not thread.is_alive(), "the harvest did not end within 120 s of shutdown"
        assert len(errors) == 1 and isinstance(errors[0], JobInterrupted)
        assert all(s["status"] == "running" for s in published.statuses)  # no final status
        assert not list(data_root.rglob("*.open"))
        assert len(api.served) < pages * per_page

        ctx, published = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    _check_resumed_run(published, data_root, api, pages * per_page)


def test_a_finished_harvest_delivered_again_is_not_harvested_again(config, data_root):
    with FakeServer() as server:
        api = PagedApi(server, pages=3, per_page=2)
        message = start_message(server.url + "/pages")
        ctx, first = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
        served, files = list(api.served), warc_files(data_root)
        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    assert first.statuses[-1]["status"] == "completed success"
    assert second.messages == []  # its final status was confirmed: nothing to report twice
    assert api.served == served and warc_files(data_root) == files


def test_a_final_status_that_was_never_confirmed_is_published_on_redelivery(config, data_root):
    class BrokerGone(Exception):
        pass

    def publish_until_final(routing_key, body):
        if body.get("status") in ("completed success", "completed failure"):
            raise BrokerGone  # the worker dies here: WARCs done, final status never confirmed
        first(routing_key, body)

    with FakeServer() as server:
        api = PagedApi(server, pages=3, per_page=2)
        message = start_message(server.url + "/pages")
        _ctx, first = context(config)
        ctx = dataclasses.replace(_ctx, publish=publish_until_final)
        with pytest.raises(BrokerGone):
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
        served = list(api.served)
        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    assert api.served == served  # nothing fetched again
    assert second.kinds()[-1] == "completed success"
    assert [w["warc"]["path"] for w in second.warcs] == [str(p) for p in warc_files(data_root)]
    assert sum(day["items"] for day in second.statuses[-1]["stats"].values()) == len(served)


def test_a_leftover_open_warc_is_recovered_reported_and_never_reported_open(config, data_root):
    from swath.harvesters.warc import WarcFile
    from swath.harvesters.warc_records import RecordFactory

    with FakeServer() as server:
        api = PagedApi(server, pages=2, per_page=2)
        message = start_message(server.url + "/pages", harvest_id="crashed:1")
        leftover = WarcFile(directory=data_root / "coll", harvest_id="crashed:1", serial=1, info={})
        factory = RecordFactory()
        for i in range(3):
            leftover.write(factory.plain(uri=f"urn:x:{i}", record_type="resource", payload=b"kept %d" % i,
                                         content_type="text/plain"))
        leftover.open_path.write_bytes(leftover.open_path.read_bytes()[:-5])  # the last record cut
        ctx, published = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    final = published.statuses[-1]
    assert [w["code"] for w in final["warnings"]] == [codes.WARC_RECOVERED, codes.HARVEST_RESUMED]
    files = warc_files(data_root)
    assert len(files) == 2 and not list(data_root.rglob("*.open"))
    assert [w["warc"]["path"] for w in published.warcs] == [str(leftover.final_path), str(files[1])]
    assert warcio_check(files).returncode == 0
    from tests.enginekit import read_records

    kept = [r[4] for r in read_records([leftover.final_path]) if r[0] == "resource"]
    assert kept == [b"kept 0", b"kept 1"]
    assert set(page_item_ids(files)) == set(api.served)
