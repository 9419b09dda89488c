"""`swath harvest ...` source commands against the real broker and store: what gets published, what is refused."""

from __future__ import annotations

import datetime as dt
import json

import orjson
import pytest

from swath.core.config import Config
from swath.store import Store, repo
from tests.fakes.httpserver import FakeServer, Response
from tests.requesterkit import swath

SECRET = "s3cr3t-value-never-printed"


def create_generic(config: Config, name: str = "pages", *extra: str) -> dict:
    return swath(config, "harvest", "create", name, "--type", "generic_pages", "--seed", "http://127.0.0.1:9/p",
                 "--option", "incremental=false", "--credential", f"api_key={SECRET}",
                 "--credential", "bearer_token=env:TEST_BEARER", "--collection-set", "cs", *extra, "--json")


def test_create_validate_launch_publishes_the_sources_harvest_start(config: Config, broker) -> None:
    start_q = broker.queue(config.queue_prefix + "starts", ["harvest.start.generic.*"])
    src = create_generic(config)
    assert src["credentials"] == {"api_key": "stored", "bearer_token": "env:TEST_BEARER"}
    assert src["validation"] == "pending"
    refused = swath(config, "harvest", "launch", "pages", "--json", expect=1)
    assert refused["error"]["code"] == "source_not_validated"
    refused = swath(config, "harvest", "validate", "pages", "--refuse", "--json", expect=1)
    assert refused["error"]["code"] == "bad_request"
    assert swath(config, "harvest", "validate", "pages", "--json")["validation"] == "accepted"
    missing = swath(config, "harvest", "launch", "pages", "--json", expect=1)
    assert missing["error"]["code"] == "credential_missing" and "TEST_BEARER" in missing["error"]["message"]

    job = swath(config, "harvest", "launch", "pages", "--json", env={"TEST_BEARER": "bearer-from-env"})
    method, _headers, body = broker.get(start_q)
    assert method.routing_key == "harvest.start.generic.generic_pages"
    assert body["id"] == job["id"] and job["published_at"] and job["status"] == "queued"
    assert body["credentials"] == {"api_key": SECRET, "bearer_token": "bearer-from-env"}
    assert body["path"] == f"collections/cs/{src['id']}" and body["collection"] == {"id": src["id"]}
    assert body["seeds"] == src["seeds"] and body["options"] == {"incremental": False}

    busy = swath(config, "harvest", "launch", "pages", "--json", expect=1, env={"TEST_BEARER": "x"})
    assert busy["error"]["code"] == "source_busy"
    outputs = [swath(config, "harvest", "sources", expect=0).output,
               json.dumps(swath(config, "harvest", "sources", "--json")),
               json.dumps(swath(config, "harvest", "jobs", "--json")), swath(config, "harvest", "jobs").output]
    assert not any(SECRET in out or "bearer-from-env" in out for out in outputs)
    assert src["name"] in outputs[0] and job["id"] in outputs[3]


def test_launch_without_a_worker_fails_the_job_with_no_worker(config: Config, broker) -> None:
    create_generic(config)
    swath(config, "harvest", "validate", "pages")
    out = swath(config, "harvest", "launch", "pages", "--json", expect=1, env={"TEST_BEARER": "x"})
    assert out["error"]["code"] == "no_worker"
    jobs = swath(config, "harvest", "jobs", "pages", "--json")
    assert [(j["status"], j["errors"][0]["code"]) for j in jobs] == [("completed failure", "no_worker")]
    # a failed launch does not block the next one
    broker.queue(config.queue_prefix + "starts", ["harvest.start.generic.*"])
    swath(config, "harvest", "launch", "pages", env={"TEST_BEARER": "x"})


def test_stop_publishes_harvest_stop_for_the_running_job(config: Config, broker) -> None:
    broker.queue(config.queue_prefix + "starts", ["harvest.start.generic.*"])
    stops = broker.queue(config.queue_prefix + "stops", ["harvest.stop.generic.*"])
    create_generic(config)
    swath(config, "harvest", "validate", "pages")
    job = swath(config, "harvest", "launch", "pages", "--json", env={"TEST_BEARER": "x"})
    stopped = swath(config, "harvest", "stop", "pages", "--json")
    method, _h, body = broker.get(stops)
    assert (method.routing_key, body) == ("harvest.stop.generic.generic_pages", {"id": job["id"]})
    assert stopped["id"] == job["id"] and stopped["stop_requested_at"]


def test_bad_input_is_refused_with_codes(config: Config) -> None:
    out = swath(config, "harvest", "create", "x", "--type", "nope", "--json", expect=1)
    assert out["error"]["code"] == "unknown_type"
    out = swath(config, "harvest", "create", "x", "--type", "generic_pages", "--credential", SECRET, "--json", expect=1)
    assert out["error"]["code"] == "bad_request" and SECRET not in json.dumps(out)
    create_generic(config)
    assert swath(config, "harvest", "create", "pages", "--type", "generic_pages", "--json",
                 expect=1)["error"]["code"] == "bad_request"
    for args in (["--every", "0s"], ["--cron", "61 * * * *"], ["--cron", "* * *"], []):
        bad = swath(config, "harvest", "schedule", "pages", *args, "--json", expect=1)
        assert bad["error"]["code"] == "bad_schedule"
    assert swath(config, "harvest", "validate", "ghost", "--json", expect=1)["error"]["code"] == "bad_request"
    with Store(url=config.db_url).session() as s:
        assert [x.name for x in repo.list_sources(s)] == ["pages"]


def test_schedule_attach_delete_purge(config: Config, tmp_path) -> None:
    src = create_generic(config)
    sched = swath(config, "harvest", "schedule", "pages", "--cron", "*/15 3 * * 1-5", "--json")
    due = dt.datetime.fromisoformat(sched["schedule"]["next_due"])
    assert sched["schedule"]["kind"] == "cron" and due > dt.datetime.now(dt.UTC)
    assert (due.hour, due.minute % 15, due.second, due.isoweekday() <= 5) == (3, 0, 0, True)
    assert swath(config, "harvest", "unschedule", "pages", "--json")["schedule"] is None
    csv_path = tmp_path / "attach.csv"
    rows = [("r1", "item-1"), ("r2", "item-2"), ("", "item-3")]
    csv_path.write_text("remote_id,item_id\n" + "".join(f"{r},{i}\n" for r, i in rows))
    out = swath(config, "harvest", "attach", "pages", str(csv_path), "--json")
    assert (out["attached"], out["updated"], out["skipped_lines"]) == (2, 0, [4])
    with Store(url=config.db_url).session() as s:
        assert repo.attachments(s, src["id"]) == {"r1": "item-1", "r2": "item-2"}
    swath(config, "harvest", "delete", "pages")
    assert swath(config, "harvest", "sources", "--json") == []
    assert [x["name"] for x in swath(config, "harvest", "sources", "--deleted", "--json")] == ["pages"]
    assert swath(config, "harvest", "launch", "pages", "--json", expect=1)["error"]["code"] == "bad_request"
    assert swath(config, "harvest", "purge", "--json")["purged"] == ["pages"]
    assert swath(config, "harvest", "sources", "--deleted", "--json") == []
    assert {b["name"] for b in swath(config, "harvest", "backends", "--json")} >= {"oai_pmh", "dcat", "ckan"}


def test_launch_sync_runs_here_and_records_job_and_warcs(config: Config) -> None:
    pages = {"/p1": ([{"id": 1}, {"id": 2}, {"id": 3}], "/p2"), "/p2": ([{"id": 4}, {"id": 5}], None)}
    server = FakeServer()
    for path, (items, nxt) in pages.items():
        server.routes[path] = lambda req, items=items, nxt=nxt: Response(
            200, orjson.dumps({"items": items, "next": nxt}))
    with server:
        swath(config, "harvest", "create", "sync", "--type", "generic_pages", "--seed", f"{server.url}/p1",
              "--credential", f"api_key={SECRET}")
        swath(config, "harvest", "validate", "sync")
        job = swath(config, "harvest", "launch", "sync", "--sync", "--json")
        served = sum(len(items) for items, _ in pages.values())
        assert all(r.arg("api_key") == SECRET for r in server.requests)
    assert job["status"] == "completed success" and job["trigger"] == "sync"
    (listed,) = swath(config, "harvest", "jobs", "sync", "--json")
    assert listed["totals"] == {"items": served}
    assert listed["warcs"]["count"] == len(listed["warcs"]["files"]) >= 1
    for warc in listed["warcs"]["files"]:
        from pathlib import Path

        data = Path(warc["path"]).read_bytes()
        assert len(data) == warc["bytes"] and SECRET not in data.decode("latin-1")


@pytest.mark.parametrize("args", [["harvest", "create"], ["harvest", "jobs"], ["export", "start"], ["monitor"],
                                  ["scheduler"], ["dashboard"]])
def test_every_command_has_help(config: Config, args: list[str]) -> None:
    out = swath(config, *args, "--help").output
    assert "Usage: " in out and ("--json" in out)


def test_export_start_refusals(config: Config, broker) -> None:
    out = swath(config, "export", "start", "tumblr_blog_posts", "--collection", "c1", "--json", expect=1)
    assert out["error"]["code"] == "no_worker"  # nothing bound to export.start.tumblr.*
    (failed,) = swath(config, "export", "list", "--json")
    assert (failed["status"], failed["errors"][0]["code"]) == ("completed failure", "no_worker")
    assert swath(config, "export", "start", "nope", "--collection", "c1", "--json", expect=1)["error"]["code"] == \
        "unknown_type"
    both = swath(config, "export", "start", "tumblr_blog_posts", "--collection", "c", "--seed-uid", "u", expect=2)
    assert "not both" in both.output
    starts = broker.queue(config.queue_prefix + "exports", ["export.start.tumblr.*"])
    export = swath(config, "export", "start", "tumblr_blog_posts", "--seed-uid", "blog-1", "--format", "json",
                   "--segment-size", "50", "--json")
    method, _h, body = broker.get(starts)
    assert method.routing_key == "export.start.tumblr.tumblr_blog_posts"
    assert body["id"] == export["id"] and [s["uid"] for s in body["seeds"]] == ["blog-1"]
    assert (body["format"], body["segment_size"], body["path"]) == ("json", 50, f"exports/{export['id']}")
    assert "collection" not in body and "options" not in body
    assert swath(config, "export", "status", export["id"], "--json")["status"] == "queued"
    assert len(swath(config, "export", "list", "--json")) == 2
    lenient = swath(config, "export", "start", "tumblr_blog_posts", "--collection", "c1", "--skip-unreadable", "--json")
    method, _h, body = broker.get(starts)
    assert (body["id"], body["options"]) == (lenient["id"], {"skip_unreadable": True})
