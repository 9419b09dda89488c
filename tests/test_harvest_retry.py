"""Issue #31 (5): `swath harvest run --retry MESSAGE` runs a harvest that ended in failure again under a derived id
that carries the collection's state on; a finished success still exits 4."""

from __future__ import annotations

import json
from pathlib import Path

from swath.harvesters.embedded import EXIT_ALREADY_FINISHED, EXIT_FAILURE, EXIT_SUCCESS
from tests.enginekit import SECRET, PagedApi
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.test_cli import json_lines, swath


def message(tmp_path: Path, harvest_id: str, url: str) -> Path:
    path = tmp_path / f"{harvest_id}.json"
    path.write_text(json.dumps({"id": harvest_id, "type": "generic_pages", "path": "collections/cs/c1",
                                "seeds": [{"id": "s1", "token": url}], "credentials": {"api_key": SECRET},
                                "options": {"incremental": True},
                                "collection_set": {"id": "cs"}, "collection": {"id": "c1"}}))
    return path


def final(stdout: str) -> dict:
    return [m["message"] for m in json_lines(stdout) if m["routing_key"].startswith("harvest.status.")][-1]


def items(status: dict) -> int:
    return sum(day.get("items", 0) for day in status["stats"].values())


def test_a_failed_harvest_is_retried_under_a_new_id_that_continues_the_collection_state(data_root, tmp_path):
    outage = {"on": False}
    with FakeServer() as server:
        api = PagedApi(server, pages=2)

        def pages(request: Request) -> Response:
            return Response(503, b'{"error": "down"}') if outage["on"] else api.handle(request)

        server.route("/pages")(pages)
        env = {"SWATH_HTTP_RETRIES": "0"}
        first = swath("harvest", "run", str(message(tmp_path, "day1", server.url + "/pages?page=1")),
                      data_root=data_root, env=env)
        assert first.returncode == EXIT_SUCCESS, first.stderr
        newest = max(api.served)

        outage["on"] = True  # the next day's run meets an outage
        day2 = message(tmp_path, "day2", server.url + "/pages?page=1")
        failed = swath("harvest", "run", str(day2), data_root=data_root, env=env)
        assert failed.returncode == EXIT_FAILURE and final(failed.stdout)["status"] == "completed failure"
        again = swath("harvest", "run", str(day2), data_root=data_root, env=env)
        assert again.returncode == EXIT_ALREADY_FINISHED  # without --retry: as before

        outage["on"] = False
        api.pages = 3  # one page of new items since day1
        before = len(server.requests)
        retried = swath("harvest", "run", "--retry", str(day2), data_root=data_root, env=env)
        asked = server.requests[before:]
        new = [i for i in api.served if i > newest]

        assert retried.returncode == EXIT_SUCCESS, retried.stderr
        status = final(retried.stdout)
        assert status["id"] == "day2.retry-1" and status["status"] == "completed success"
        assert "retrying it as day2.retry-1" in retried.stderr
        assert asked and all(r.arg("since_id") == str(newest) for r in asked)  # day1's state carried on
        assert items(status) == len(new) > 0

        before = len(server.requests)
        done = swath("harvest", "run", "--retry", str(day2), data_root=data_root, env=env)
        assert done.returncode == EXIT_ALREADY_FINISHED and "day2.retry-1 already finished" in done.stderr
        assert len(server.requests) == before  # a finished success is not harvested again
