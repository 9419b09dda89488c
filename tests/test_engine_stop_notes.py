"""Issue 31 item 8: harvest.stop (a cancel) ends a REST harvest at its next page, and a resumed harvest's
final status carries the notes of the run that was interrupted."""

from __future__ import annotations

import pytest

from swath.core.jobs import JobInterrupted
from swath.harvesters.run import run_harvest
from swath.messages import codes
from tests.enginekit import PagedApi, context, page_item_ids, routing_key, start_message, warc_files
from tests.fakes.httpserver import FakeServer, Request, Response


def test_harvest_stop_ends_a_rest_harvest_at_its_next_page(config, data_root):
    pages = 50
    with FakeServer() as server:
        api = PagedApi(server, pages=pages)
        ctx, published = context(config)

        def stop_at_page_10(request: Request) -> Response:
            if request.arg("page") == "10":
                ctx.stop.set()  # what the worker does on harvest.stop for this id (a cancel of a taken job)
            return api.handle(request)

        server.route("/pages")(stop_at_page_10)
        run_harvest(start_message(server.url + "/pages", harvest_id="rest-stop"), routing_key=routing_key(), ctx=ctx)
        requested = [int(r.query.get("page", ["1"])[0]) for r in server.requests if r.path == "/pages"]
    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    assert codes.HARVEST_STOPPED in [w["code"] for w in final["warnings"]]
    assert max(requested) == 10 < pages  # page 10 was answered, the next request was not made
    assert sorted(page_item_ids(warc_files(data_root))) == sorted(api.served)
    assert sum(day["items"] for day in final["stats"].values()) == len(api.served)


def test_a_resumed_harvest_reports_the_interrupted_runs_notes(config, data_root):
    with FakeServer() as server:
        api = PagedApi(server, pages=30)
        ctx, first = context(config)

        def interrupt_at_page_5(request: Request) -> Response:
            if request.arg("page") == "5":
                ctx.stop.set()
                ctx.shutdown.set()  # a worker shutting down: the harvest is left to resume
            return api.handle(request)

        server.route("/pages")(interrupt_at_page_5)
        server.route("/gone")(lambda request: Response(404, b'{"error": "no such account"}'))
        message = start_message(server.url + "/gone", harvest_id="notes")
        message["seeds"].append({"id": "seed-2", "token": server.url + "/pages"})
        with pytest.raises(JobInterrupted):
            run_harvest(message, routing_key=routing_key(), ctx=ctx)

        ctx, second = context(config)
        run_harvest(message, routing_key=routing_key(), ctx=ctx)
        gone_requests = sum(1 for r in server.requests if r.path == "/gone")
    final = second.statuses[-1]
    assert final["status"] == "completed success", final
    assert gone_requests == 1  # the resumed run did not ask again: the note comes from the interrupted run
    assert [(w["code"], w.get("seed_id")) for w in final["warnings"] if w["code"] == codes.TOKEN_NOT_FOUND] == [
        (codes.TOKEN_NOT_FOUND, "seed-1")]
    assert set(page_item_ids(warc_files(data_root))) == set(range(30 * 5))
