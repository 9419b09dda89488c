"""Real storage faults (issue 31): a small tmpfs the test mounts, filled during a stream harvest, a REST harvest
and an export, and remounted read-only. Each run stops with a coded status, leaves complete WARCs and a
readable state (no `.open`, no empty or temp state file), and the run after space returns completes."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swath.core.jobs import JobContext, JobInterrupted
from swath.core.storage import Ballast, StorageFault
from swath.exporters import registry, wacz
from swath.exporters.base import run_export
from swath.harvesters.run import run_harvest
from swath.harvesters.warc import WarcSeries, WarcWriteFailed
from swath.harvesters.warc_records import RecordFactory
from swath.messages import codes
from swath.messages.broker import Publisher
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import (
    PagedApi,
    context,
    page_item_ids,
    read_records,
    routing_key,
    start_message,
    warc_files,
    warcio_check,
)
from tests.fakes.httpserver import FakeServer, Request, Response, end_chunks, write_chunk
from tests.test_export import expected_items, item_id, read_rows

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root (CI runs as root)")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, unmounted at the end."""
    mount = tmp_path / "disk"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)], check=True)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path, leave: int) -> Path:
    """A file taking all but about `leave` bytes of the disk (removed to give the space back)."""
    filler = disk / "filler"
    st = os.statvfs(disk)
    filler.write_bytes(b"\0" * max(st.f_bavail * st.f_frsize - leave, 0))
    return filler


def disk_config(config, disk: Path, **changes):
    data_root = disk / "data"
    data_root.mkdir(exist_ok=True)
    return dataclasses.replace(config, data_root=data_root, min_free_bytes=0, **changes)


def padding(n: int) -> str:
    """Text that does not compress away, so the WARCs fill the disk."""
    return "".join(hashlib.sha256(f"{n}:{i}".encode()).hexdigest() for i in range(4))


class CountedStream:
    """/stream: chunked JSON lines `{"conn", "id", "pad"}`; the first connection runs until the client goes,
    later ones end after `then` lines. `served[conn]` counts the lines written to each connection."""

    def __init__(self, server: FakeServer, *, then: int) -> None:
        self.then = then
        self.served: list[int] = []
        self._lock = threading.Lock()
        server.route("/stream")(self.handle)

    def handle(self, request: Request) -> Response:
        with self._lock:
            conn = len(self.served)
            self.served.append(0)

        def body(wfile) -> None:
            n = 0
            while conn == 0 or n < self.then:
                write_chunk(wfile, json.dumps({"conn": conn, "id": n, "pad": padding(n)}).encode() + b"\n")
                self.served[conn] = n = n + 1
                if conn == 0:
                    time.sleep(0.001)  # paced, so some WARCs are complete before the disk fills
            end_chunks(wfile)

        return Response(200, body, content_type="application/x-ndjson")


def stream_lines(paths: list[Path]) -> list[tuple[int, int]]:
    """(connection, id) of every stream line in the WARCs, in WARC order."""
    return [(item["conn"], item["id"]) for rtype, _, _, _, payload, _ in read_records(paths) if rtype == "response"
            for item in map(json.loads, filter(bytes.strip, payload.splitlines()))]


def assert_left_clean(data_root: Path) -> None:
    """Complete WARCs only, and a state file that is whole JSON or absent, with no temp file beside it."""
    assert not list(data_root.rglob("*.open")), "an .open WARC was left"
    assert not list(data_root.rglob("*.tmp")), "a temp state file was left"
    for state in data_root.rglob("swath-state.json"):
        json.loads(state.read_text())  # never empty or cut
    files = warc_files(data_root)
    assert files and warcio_check(files).returncode == 0


def assert_failed_with(published, code: str) -> dict:
    """The last status is a failure with exactly one error, of `code`."""
    final = published.statuses[-1]
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == [code]
    return final


def test_a_full_disk_stops_a_stream_harvest_with_disk_full_and_the_next_run_resumes(config, small_disk):
    config = disk_config(config, small_disk, warc_max_seconds=0.2)
    filler = fill(small_disk, leave=200_000)
    message = start_message("", harvest_id="full-stream", type_="generic_stream")
    with FakeServer() as server:
        api = CountedStream(server, then=500)
        message["seeds"][0]["token"] = server.url + "/stream"
        ctx, first = context(config)
        run_harvest(message, routing_key=routing_key("generic_stream"), ctx=ctx)  # returns: the worker goes on

        final = first.statuses[-1]
        assert [s["status"] for s in first.statuses[:-1]] == ["running"] * (len(first.statuses) - 1)
        assert final["status"] == "completed failure"
        [error] = final["errors"]
        assert error["code"] == codes.DISK_FULL
        assert str(config.data_root) in error["message"] and "bytes free" in error["message"]
        assert_left_clean(config.data_root)
        kept = stream_lines(warc_files(config.data_root))
        assert kept and kept == [(0, i) for i in range(len(kept))]  # a gap-free prefix of the first connection
        counted = sum(day["items"] for day in final["stats"].values())
        assert 0 < counted <= len(kept)  # the stats count what complete WARCs hold, not what was received
        assert [w["warc"]["path"] for w in first.warcs] == [str(p) for p in warc_files(config.data_root)]

        filler.unlink()  # space returns
        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key("generic_stream"), ctx=ctx)
    final = second.statuses[-1]
    assert final["status"] == "completed success", final
    warnings = [w["code"] for w in final["warnings"]]
    assert codes.HARVEST_RESUMED in warnings and codes.DISK_FULL in warnings  # the interrupted run's note kept
    assert_left_clean(config.data_root)
    lines = stream_lines(warc_files(config.data_root))
    assert lines[: len(kept)] == kept  # the first run's WARCs are kept as they were
    assert [i for conn, i in lines if conn == 1] == list(range(api.served[1]))  # all the resumed connection sent
    assert sum(day["items"] for day in final["stats"].values()) == counted + api.served[1]


def test_the_writer_gives_the_ballast_back_before_it_salvages_the_warc_the_full_disk_refused(small_disk):
    """When the disk fills, the WARC writer gives back the run's ballast (`before_salvage`) before it cuts, fsyncs
    and renames the WARC whose write failed: on a disk that needs room for that (an fsync refused with ENOSPC),
    the WARC would otherwise stay `.open` until the next run. A tmpfs needs none, so the order is what is checked
    (the fencing hook runs inside the salvage, after `before_salvage`), and the WARC is closed in this run."""
    import random

    directory = small_disk / "harvest"
    directory.mkdir()
    fill(small_disk, leave=300_000)
    ballast = Ballast(directory / "full.ballast")
    ballast.lay()
    laid_at_salvage: list[bool] = []  # the fencing hook runs once, in the salvage: was the ballast still laid?
    closed: list = []
    series = WarcSeries(directory=directory, harvest_id="full", info={"software": "test"},
                        on_closed=lambda warc, token: closed.append((warc, token)),
                        before_rename=lambda: laid_at_salvage.append(ballast.path.exists()),
                        before_salvage=ballast.release)
    factory, payloads = RecordFactory(), []
    with pytest.raises(WarcWriteFailed):
        while len(payloads) < 10_000:  # until the disk refuses (about 70 records)
            payloads.append(random.Random(len(payloads)).randbytes(4096))  # does not compress away
            series.write([factory.plain(uri=f"urn:test:{len(payloads)}", record_type="resource",
                                        payload=payloads[-1], content_type="application/octet-stream")])
    with pytest.raises(WarcWriteFailed):
        series.finish(None)
    assert isinstance(series.failed, StorageFault) and series.failed.code == codes.DISK_FULL
    assert laid_at_salvage == [False] and not ballast.path.exists()
    [(warc, token)] = closed
    assert token is None and warc.path.exists() and not list(directory.rglob("*.open"))
    assert warcio_check([warc.path]).returncode == 0
    kept = [record[4] for record in read_records([warc.path])][1:]
    assert kept and kept == payloads[: len(kept)]  # the complete records before the refused one, in order


def test_a_read_only_data_root_refuses_the_resumed_harvest_and_the_export_with_a_code(config, small_disk,
                                                                                        fixtures_dir):
    # the kernel refuses `remount,ro` while a WARC is open for writing (EBUSY), so the harvest is interrupted
    # (shutdown, resumable) first and the disk goes read-only between its runs
    config = disk_config(config, small_disk, warc_max_bytes=4000)
    shutil.copytree(fixtures_dir / "sfm-warcs" / "tumblr", config.data_root / "collections" / "set1" / "tumblr")
    pages, per_page = 60, 5
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page)
        ctx, first = context(config)

        def interrupt_at_page_20(request: Request) -> Response:
            if request.arg("page") == "20":
                ctx.stop.set()
                ctx.shutdown.set()
            return api.handle(request)

        server.route("/pages")(interrupt_at_page_20)
        message = start_message(server.url + "/pages", harvest_id="ro-rest")
        with pytest.raises(JobInterrupted):
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
        before = sorted((p, p.stat().st_size) for p in config.data_root.rglob("*") if p.is_file())

        subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
        try:
            ctx, refused = context(config)
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
            exported: list[dict] = []
            export_ctx = JobContext(config=config, publish=lambda key, body: exported.append(body), service="t")
            run_export(tumblr_export(), routing_key=registry.start_routing_key("tumblr_blog_posts"), ctx=export_ctx)
        finally:
            subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
        assert len(refused.statuses) == 1
        assert_failed_with(refused, codes.DATA_ROOT_UNWRITABLE)
        assert exported[-1]["status"] == "completed failure"
        assert [e["code"] for e in exported[-1]["errors"]] == [codes.DATA_ROOT_UNWRITABLE]
        assert sorted((p, p.stat().st_size) for p in config.data_root.rglob("*") if p.is_file()) == before

        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    assert second.statuses[-1]["status"] == "completed success", second.statuses[-1]
    assert_left_clean(config.data_root)
    assert set(page_item_ids(warc_files(config.data_root / "coll"))) == set(api.served) == set(range(pages * per_page))


def tumblr_export() -> dict:
    return {"id": "exp-full", "type": "tumblr_blog_posts", "path": "exports/1", "format": "csv",
            "collection": {"id": "tumblr"}}


def test_a_full_disk_fails_an_export_with_disk_full_and_removes_its_partial_files(config, small_disk, fixtures_dir):
    config = disk_config(config, small_disk, status_interval=0.0)
    collection = config.data_root / "collections" / "set1" / "tumblr"
    shutil.copytree(fixtures_dir / "sfm-warcs" / "tumblr", collection)
    filler = fill(small_disk, leave=8_000)
    published: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: published.append(body), service="t")
    key = registry.start_routing_key("tumblr_blog_posts")
    run_export(tumblr_export(), routing_key=key, ctx=ctx)
    final = published[-1]
    assert final["status"] == "completed failure"
    [error] = final["errors"]
    assert error["code"] == codes.DISK_FULL and "bytes free" in error["message"]
    out = config.data_root / "exports" / "1"
    assert not [p for p in out.rglob("*") if p.is_file()], "partial export files were left"

    filler.unlink()
    published.clear()
    run_export(tumblr_export(), routing_key=key, ctx=ctx)
    assert published[-1]["status"] == "completed success", published[-1]
    rows = [row for path in sorted(out.glob("*.csv")) for row in read_rows(path)]
    expected = {item_id("tumblr_post", i) for i in expected_items(sorted(collection.rglob("*.warc.gz")), "tumblr_post")}
    assert {row["tumblr_id"] for row in rows} == expected


def test_a_harvest_or_export_does_not_start_below_the_free_space_minimum(config, small_disk, fixtures_dir):
    config = disk_config(config, small_disk)
    shutil.copytree(fixtures_dir / "sfm-warcs" / "tumblr", config.data_root / "collections" / "set1" / "tumblr")
    st = os.statvfs(small_disk)
    config = dataclasses.replace(config, min_free_bytes=st.f_bavail * st.f_frsize + 1)
    before = sorted(config.data_root.rglob("*"))
    with FakeServer() as server:
        api = PagedApi(server, pages=2)
        ctx, published = context(config)
        run_harvest(start_message(server.url + "/pages", harvest_id="low"), routing_key=routing_key(), ctx=ctx)
    assert len(published.statuses) == 1
    assert_failed_with(published, codes.FREE_SPACE_LOW)
    assert api.served == []

    exported: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: exported.append(body), service="t")
    run_export(tumblr_export(), routing_key=registry.start_routing_key("tumblr_blog_posts"), ctx=ctx)
    assert exported[-1]["status"] == "completed failure"
    assert [e["code"] for e in exported[-1]["errors"]] == [codes.FREE_SPACE_LOW]
    assert sorted(config.data_root.rglob("*")) == before  # neither wrote anything


def test_a_running_harvest_stops_cleanly_when_free_space_falls_below_the_minimum(config, small_disk):
    config = disk_config(config, small_disk, warc_max_bytes=8000)
    filler = fill(small_disk, leave=600_000)
    config = dataclasses.replace(config, min_free_bytes=500_000)  # crossed well before the disk is full
    pages, per_page = 300, 20
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.01)
        message = start_message(server.url + "/pages", harvest_id="guard")
        ctx, first = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
        assert_failed_with(first, codes.FREE_SPACE_LOW)
        assert len(api.served) < pages * per_page
        assert_left_clean(config.data_root)
        assert [w["warc"]["path"] for w in first.warcs] == [str(p) for p in warc_files(config.data_root)]
        served_first = len(api.served)

        filler.unlink()
        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    final = second.statuses[-1]
    assert final["status"] == "completed success", final
    assert set(page_item_ids(warc_files(config.data_root))) == set(range(pages * per_page))
    assert sum(day["items"] for day in final["stats"].values()) == pages * per_page
    assert len(api.served) - served_first < pages * per_page  # resumed at its checkpoint, not from page 1


def test_swath_config_shows_the_data_roots_free_space(small_disk):
    fill(small_disk, leave=300_000)
    env = {**os.environ, "SWATH_DATA_ROOT": str(small_disk / "data"), "SWATH_MIN_FREE_BYTES": "400000"}
    shown = subprocess.run([sys.executable, "-m", "swath", "config", "--json"], env=env, capture_output=True,
                           text=True, check=True)
    st = os.statvfs(small_disk)
    assert json.loads(shown.stdout)["data_root_free_bytes"] == st.f_bavail * st.f_frsize
    text = subprocess.run([sys.executable, "-m", "swath", "config"], env=env, capture_output=True, text=True,
                          check=True).stdout
    assert f"({st.f_bavail * st.f_frsize} bytes)  BELOW SWATH_MIN_FREE_BYTES" in text


def test_a_full_disk_fails_a_wacz_with_disk_full_and_leaves_no_part_file(small_disk, fixtures_dir, tmp_path):
    warcs = sorted((fixtures_dir / "sfm-warcs" / "tumblr").rglob("*.warc.gz"))
    filler = fill(small_disk, leave=8_000)
    out = small_disk / "out" / "coll.wacz"
    with pytest.raises(StorageFault) as raised:
        wacz.package(warcs, out, title="full")
    assert raised.value.code == codes.DISK_FULL
    assert not [p for p in (small_disk / "out").iterdir()], "a partial WACZ was left"

    filler.unlink()
    made = wacz.package(warcs, out, title="full")
    assert made.warcs == len(warcs) and out.stat().st_size > 0


def test_a_full_disk_stops_a_rest_harvest_in_the_worker_which_serves_on_and_resumes_it(config, broker, small_disk):
    config = disk_config(config, small_disk, warc_max_bytes=8000)
    filler = fill(small_disk, leave=60_000)
    pages, per_page = 120, 20
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page)
        message = start_message(server.url + "/pages", harvest_id="worker-full")
        with running_worker(config, "generic_harvester") as worker, Publisher(config=config) as requester:
            requester.publish(routing_key(), message).result(120)
            first = until_final(broker, config.status_queue)
            assert len(api.served) < pages * per_page, "the disk filled before the harvest's end"
            assert_left_clean(config.data_root)
            filler.unlink()
            requester.publish(routing_key(), message).result(120)  # the same worker takes the start again
            second = until_final(broker, config.status_queue)
            assert worker.consuming.is_set()
    failed, done = first[-1][1], second[-1][1]
    assert failed["status"] == "completed failure" and [e["code"] for e in failed["errors"]] == [codes.DISK_FULL]
    assert done["status"] == "completed success", done
    assert codes.DISK_FULL in [w["code"] for w in done["warnings"]]  # the interrupted run's error, carried
    assert_left_clean(config.data_root)
    assert set(page_item_ids(warc_files(config.data_root))) == set(api.served) == set(range(pages * per_page))
    assert sum(day["items"] for day in done["stats"].values()) == pages * per_page
