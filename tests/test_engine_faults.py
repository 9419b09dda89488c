"""A harvest that failed on swath's own side (a WARC could not be renamed) is resumed by the next
delivery of its start, not ignored as finished; a failure of the remote side stays final."""

from __future__ import annotations

import dataclasses
import datetime as dt
import os

from swath.harvesters import warc
from swath.harvesters.run import run_harvest
from swath.messages import codes
from tests.enginekit import PagedApi, context, page_item_ids, routing_key, start_message, warc_files
from tests.fakes.httpserver import FakeServer


def test_a_local_fault_is_resumed_by_the_next_delivery(config, data_root, monkeypatch):
    config = dataclasses.replace(config, warc_max_bytes=2500)
    pages, per_page = 24, 5
    real_replace, calls = os.replace, []

    def failing_replace(src, dst):  # the second WARC's rename fails, as on a full or vanished disk
        if str(dst).endswith(".warc.gz"):
            calls.append(dst)
        if len(calls) == 2 and str(dst).endswith(".warc.gz"):
            raise OSError(28, "No space left on device")
        return real_replace(src, dst)

    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.02)  # time to rotate between pages
        message = start_message(server.url + "/pages", harvest_id="fault:1")
        monkeypatch.setattr(warc.os, "replace", failing_replace)
        ctx, first = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
        monkeypatch.setattr(warc.os, "replace", real_replace)
        assert len(calls) >= 2, "the harvest rotated at least once, so a WARC rename could fail"
        assert first.statuses[-1]["status"] == "completed failure"
        assert [e["code"] for e in first.statuses[-1]["errors"]] == [codes.DISK_FULL]  # ENOSPC, said as such

        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
    final = second.statuses[-1]
    assert final["status"] == "completed success", final
    assert codes.HARVEST_RESUMED in [w["code"] for w in final["warnings"]]
    files = warc_files(data_root)
    assert set(page_item_ids(files)) == set(range(pages * per_page))
    assert sum(day.get("items", 0) for day in final["stats"].values()) == pages * per_page
    assert len(api.served) < 2 * pages * per_page  # resumed where it was, not harvested again from the start
    assert sorted(w["warc"]["path"] for w in second.warcs) == [str(p) for p in files]


def test_a_remote_failure_stays_final(config, data_root):
    with FakeServer() as server:
        PagedApi(server, pages=2)
        message = start_message(server.url + "/pages", harvest_id="fault:2", credentials={"api_key": "wrong-key"})
        for _ in range(2):
            ctx, published = context(config)
            run_harvest(message, routing_key=routing_key(), ctx=ctx)
        requests_made = len(server.requests)
    assert [s["status"] for s in published.statuses] == []  # the second delivery published nothing new
    assert requests_made == 1


def test_a_symlink_planted_in_a_harvest_directory_is_not_followed_out(config, data_root, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    message_path = data_root / "coll"
    message_path.mkdir()
    year = dt.datetime.now(dt.UTC).year
    for y in (year, year + 1):  # the WARC folder is <year>/<month>/<day>/<hour>: plant it where it will go
        (message_path / str(y)).symlink_to(outside)
    with FakeServer() as server:
        PagedApi(server, pages=2)
        ctx, published = context(config)
        run_harvest(start_message(server.url + "/pages", harvest_id="planted"), routing_key=routing_key(), ctx=ctx)
    final = published.statuses[-1]
    assert final["status"] == "completed failure"
    assert "symlink leading out" in final["errors"][0]["message"]
    assert not list(outside.rglob("*")), "something was written through the symlink"
