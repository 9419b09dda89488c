"""Bluesky REST harvests (author feed, search, custom feed) through the atproto SDK on the recording path,
against a fake XRPC API: WARC, status, incremental re-runs, app-password sessions kept secret, exports."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import json
import logging
from collections import Counter

import pytest

from swath.core.jobs import JobContext
from swath.exporters.base import run_export
from swath.messages import codes
from tests.fakes.bluesky import APP_PASSWORD, IDENTIFIER, FakeBluesky
from tests.fakes.httpserver import HANG_UP
from tests.fakes.social import run_harvest_job, start_body

LOGIN = {"identifier": IDENTIFIER, "app_password": APP_PASSWORD}
ALICE, BOB, CAROL = "did:plc:alice0000000000000000001", "did:plc:bob000000000000000000002", \
    "did:plc:carol0000000000000000003"
FEED = "at://did:plc:bob000000000000000000002/app.bsky.feed.generator/science"


@pytest.fixture
def fake():
    with FakeBluesky(require_auth=True) as server:
        yield server


@pytest.fixture
def cfg(config, fake):
    return config.with_api_url("bluesky", fake.url)


def entry_key(entry: dict) -> str:
    reason = entry.get("reason")
    return reason["uri"] if reason else entry["post"]["uri"]


def served_keys(fake: FakeBluesky, path: str, field: str) -> list[str]:
    """The id of every entry the fake sent on that path (a search hit is a post)."""
    return [entry_key(e) if field == "feed" else e["uri"]
            for body in fake.bodies(path) for e in json.loads(body)[field]]


def export_rows(config, export_type: str, export_id: str, *, fmt: str = "csv", dedupe: bool = True,
                skip_unreadable: bool = False) -> tuple[dict, list[dict]]:
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="test")
    body = {"id": export_id, "type": export_type, "collection": {"id": "c1"}, "path": f"exports/{export_id}",
            "format": "json_full" if fmt == "jsonl" else fmt, "dedupe": dedupe, "segment_size": None,
            **({"options": {"skip_unreadable": True}} if skip_unreadable else {})}
    run_export(body, routing_key=f"export.start.bluesky.{export_type}", ctx=ctx)
    rows: list[dict] = []
    for path in sorted((config.data_root / "exports" / export_id).glob(f"*.{fmt}")):
        if fmt == "csv":
            with path.open(newline="", encoding="utf-8") as fh:
                rows += list(csv.DictReader(fh))
        else:
            rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return statuses[-1], rows


def assert_no_secrets(out, fake: FakeBluesky, config, caplog) -> None:
    secrets = [APP_PASSWORD, *fake.issued]
    assert fake.issued  # the login happened: there are tokens to look for
    published = json.dumps(out.sent)
    stored = [p.read_bytes() for p in config.data_root.rglob("*") if p.is_file()]  # WARCs, state, journal
    raw = out.raw_warc_bytes()
    for secret in secrets:
        assert secret not in published and secret not in caplog.text
        assert secret.encode() not in raw and not any(secret.encode() in data for data in stored)


def test_author_feed_end_to_end_with_login_renames_and_incremental(cfg, fake, caplog):
    caplog.set_level(logging.DEBUG)
    seeds = [{"id": "s-alice", "token": "alice.example.com"},
             {"id": "s-carol", "token": "carol.bsky.social", "uid": CAROL},  # renamed since
             {"id": "s-gone", "token": "nobody.bsky.social"},
             {"id": "s-spam", "token": "spam.bsky.social"}]
    body = start_body("bluesky_author_feed", seeds, credentials=LOGIN, options={"incremental": True})
    out = run_harvest_job(cfg, body)

    assert out.status["status"] == "completed success", out.status
    assert out.status["uids"] == {"s-alice": ALICE}
    assert out.status["token_updates"] == {"s-carol": "carol-new.bsky.social"}
    assert sorted(out.codes("warnings")) == [(codes.TOKEN_NOT_FOUND, "s-gone"), (codes.TOKEN_SUSPENDED, "s-spam")]
    expected = fake.author_entries(ALICE) + fake.author_entries(CAROL)
    assert any("reason" in e for e in expected)  # reposts are part of it
    assert out.count("posts") == len(expected)
    # every page paged by cursor, the WARC replays exactly what was sent; the login is not in it
    assert Counter(b for uri, s, b in out.records() if s == 200 and "getAuthorFeed" in uri) == \
        Counter(fake.bodies("/xrpc/app.bsky.feed.getAuthorFeed"))
    assert b"createSession" not in out.raw_warc_bytes() and b"refreshSession" not in out.raw_warc_bytes()
    assert len(fake.server.requests_to("/xrpc/com.atproto.server.refreshSession")) == 1  # the SDK refreshed
    # the DID document names another PDS: the client stayed on the configured API root
    assert {r.path.split("/")[1] for r in fake.server.requests} == {"xrpc"}
    assert_no_secrets(out, fake, cfg, caplog)

    # the same harvest again: nothing new, only the first page of each feed asked for
    before = len(fake.server.requests_to("/xrpc/app.bsky.feed.getAuthorFeed"))
    again = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})
    assert again.status["status"] == "completed success" and again.count("posts") == 0
    assert len(fake.server.requests_to("/xrpc/app.bsky.feed.getAuthorFeed")) - before == 2
    added = fake.add_posts(3, did=ALICE)
    third = run_harvest_job(cfg, {**body, "id": body["id"] + "-3"})
    assert third.count("posts") == len(added)

    status, rows = export_rows(cfg, "bluesky_author_feed", "e1")
    assert status["status"] == "completed success", status
    assert sorted(r["id"] for r in rows) == sorted({entry_key(e) for e in expected} | {p["uri"] for p in added})
    by_id = {r["id"]: r for r in rows}
    repost = next(e for e in expected if "reason" in e)
    row = by_id[repost["reason"]["uri"]]
    assert row["uri"] == repost["post"]["uri"] and row["reposted_by"] == "alice.example.com"
    post = next(e["post"] for e in expected if "reason" not in e)
    row = by_id[post["uri"]]
    handle, rkey = post["author"]["handle"], post["uri"].rsplit("/", 1)[1]
    assert row["url"] == f"https://bsky.app/profile/{handle}/post/{rkey}"
    assert row["text"] == post["record"]["text"] and row["author_display_name"] == post["author"]["displayName"]
    assert row["like_count"] == str(post["likeCount"])


def test_a_handle_login_masks_no_handle_in_the_archive_or_the_export(config, caplog):
    """Issue 29: logging in with the handle of an account being harvested left `*****` for that handle in
    every body, URL and exported row. A handle is public: only the app password and the JWTs are secrets."""
    caplog.set_level(logging.DEBUG)
    with FakeBluesky(require_auth=True, identifier="alice.example.com") as fake:
        cfg = config.with_api_url("bluesky", fake.url)
        handle = fake.world.profiles[ALICE]["handle"]
        assert handle == fake.identifier  # the login name is the harvested account's handle
        body = start_body("bluesky_author_feed", [{"id": "s-alice", "token": handle},
                                                  {"id": "s-bob", "token": "bob.bsky.social"}],
                          credentials={"identifier": handle, "app_password": APP_PASSWORD})
        out = run_harvest_job(cfg, body)
        assert out.status["status"] == "completed success", out.status
        # every answer archived byte for byte, its request URL and WARC-Target-URI with the handle in it
        records = out.records_with_headers()
        assert Counter(payload for _, _, payload, _ in records) == Counter(fake.bodies("/xrpc/app.bsky."))
        assert not [uri for uri, _, _, headers in records if "WARC-Swath-Redacted" in headers]
        assert [r.arg("actor") for r in fake.server.requests_to("/xrpc/app.bsky.actor.getProfile")][0] == handle
        assert any(uri.endswith(f"getProfile?actor={handle}") for uri, _, _, _ in records)
        assert_no_secrets(out, fake, cfg, caplog)

        status, rows = export_rows(cfg, "bluesky_author_feed", "e-handle")
        expected = fake.author_entries(ALICE) + fake.author_entries(BOB)
    assert status["status"] == "completed success", status
    by_id = {row["id"]: row for row in rows}
    assert sorted(by_id) == sorted(entry_key(e) for e in expected)
    for entry in expected:
        row, author = by_id[entry_key(entry)], entry["post"]["author"]["handle"]
        rkey = entry["post"]["uri"].rsplit("/", 1)[1]
        assert (row["author_handle"], row["url"], row["reposted_by"]) == (
            author, f"https://bsky.app/profile/{author}/post/{rkey}",
            entry["reason"]["by"]["handle"] if "reason" in entry else ""), row["id"]
    assert any(r["author_handle"] == handle for r in rows) and any(r["reposted_by"] == handle for r in rows)


def test_search_pages_with_since_until_and_waits_out_a_rate_limit(cfg, fake):
    hits = fake.search_hits("archive")
    since, until = hits[-5]["indexedAt"], hits[4]["indexedAt"]  # newest first: a window inside the hits
    window = fake.search_hits("archive", since, until)
    assert 10 < len(window) < len(hits)
    fake.faults.rate_limited, fake.faults.path = 1, "/xrpc/app.bsky.feed.searchPosts"
    out = run_harvest_job(cfg, start_body("bluesky_search", [
        {"id": "s1", "token": {"query": "archive", "since": since, "until": until}}], credentials=LOGIN))

    assert fake.faults.served and fake.faults.served[0][0] == 429
    assert out.status["status"] == "completed success", out.status
    assert codes.RATE_LIMITED in [c for c, _ in out.codes("infos")]
    assert out.count("posts") == len(window)
    asked = fake.server.requests_to("/xrpc/app.bsky.feed.searchPosts")
    assert all(r.arg("since") == since and r.arg("until") == until and r.arg("sort") == "latest" for r in asked)
    assert sorted(served_keys(fake, "/xrpc/app.bsky.feed.searchPosts", "posts")) == sorted(p["uri"] for p in window)

    status, rows = export_rows(cfg, "bluesky_search", "s1", fmt="json")
    assert status["status"] == "completed success", status
    assert sorted(r["id"] for r in rows) == sorted(p["uri"] for p in window)
    row = next(r for r in rows if r["id"] == window[0]["uri"])
    assert json.loads(row["hashtags"]) == [t["features"][0]["tag"] for t in window[0]["record"]["facets"][:1]]
    assert json.loads(row["mentions"]) == [BOB]
    assert json.loads(row["links"]) == [window[0]["record"]["facets"][2]["features"][0]["uri"]]
    # json_full: each hit's JSON as it was sent
    status, full = export_rows(cfg, "bluesky_search", "s2", fmt="jsonl")
    assert status["status"] == "completed success", status
    assert sorted(full, key=lambda p: p["uri"]) == sorted(window, key=lambda p: p["uri"])


def test_incremental_search_sends_the_last_runs_newest_time(cfg, fake):
    body = start_body("bluesky_search", [{"id": "s1", "token": "archive"}], credentials={},
                      options={"incremental": True})
    denied = run_harvest_job(cfg, body)  # this AppView wants a login
    assert denied.status["status"] == "completed failure"
    assert [c for c, _ in denied.codes("errors")] == [codes.UNAUTHORIZED]
    fake.require_auth = False  # searching without login (a public AppView)
    first = run_harvest_job(cfg, {**body, "id": body["id"] + "-a"})
    hits = fake.search_hits("archive")
    assert first.count("posts") == len(hits)
    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-b"})
    assert second.count("posts") == 0
    sent = fake.server.requests_to("/xrpc/app.bsky.feed.searchPosts")[-1].arg("since")
    assert dt.datetime.fromisoformat(sent) == max(dt.datetime.fromisoformat(h["indexedAt"]) for h in hits)


def test_feed_with_deleted_and_edited_posts_exports_each_post_once_newest_copy(cfg, fake):
    body = start_body("bluesky_feed", [{"id": "science", "token": FEED}, {"id": "nope", "token": FEED + "-x"}],
                      credentials=LOGIN)
    first = run_harvest_job(cfg, body)
    uris = fake.world.feeds[FEED]
    assert first.status["status"] == "completed success", first.status
    assert first.codes("warnings") == [(codes.TOKEN_NOT_FOUND, "nope")]
    assert first.count("posts") == len(uris) > 3
    gone, edited = uris[0], uris[1]
    fake.delete(gone)
    fake.edit(edited, "edited text, same uri")
    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})
    assert second.count("posts") == len(uris) - 1

    status, rows = export_rows(cfg, "bluesky_feed", "f1")
    assert status["status"] == "completed success", status
    assert sorted(r["id"] for r in rows) == sorted(uris)  # the deleted post was harvested once: kept
    assert {r["id"]: r["text"] for r in rows}[edited] == "edited text, same uri"
    _, everything = export_rows(cfg, "bluesky_feed", "f2", dedupe=False)
    assert len(everything) == 2 * len(uris) - 1


def test_incremental_feed_rerun_counts_nothing_and_stops_after_one_page(cfg, fake):
    body = start_body("bluesky_feed", [{"id": "science", "token": FEED}], credentials=LOGIN,
                      options={"incremental": True})
    first = run_harvest_job(cfg, body)
    uris = fake.world.feeds[FEED]
    assert first.count("posts") == len(uris) > fake.page_size  # more than one page
    asked = len(fake.server.requests_to("/xrpc/app.bsky.feed.getFeed"))
    again = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})
    assert again.status["status"] == "completed success" and again.count("posts") == 0
    assert len(fake.server.requests_to("/xrpc/app.bsky.feed.getFeed")) - asked == 1


def test_wrong_app_password_fails_without_the_password_anywhere(cfg, fake, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "wxyz-wxyz-wxyz-wxyz"
    out = run_harvest_job(cfg, start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}],
                                          credentials={"identifier": IDENTIFIER, "app_password": wrong}))
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.UNAUTHORIZED, None)]
    assert wrong not in json.dumps(out.sent) and wrong not in caplog.text
    assert not out.warcs or wrong.encode() not in out.raw_warc_bytes()


def test_a_rate_limited_login_is_rate_limited_not_unauthorized(cfg, fake):
    fake.faults.rate_limited, fake.faults.path = 1, "/xrpc/com.atproto.server.createSession"
    out = run_harvest_job(cfg, start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}],
                                          credentials=LOGIN))
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.RATE_LIMITED, None)]
    assert not fake.server.requests_to("/xrpc/app.bsky.feed.getAuthorFeed")


@pytest.mark.parametrize("path", ["/xrpc/com.atproto.server.createSession", "/xrpc/com.atproto.server.refreshSession"])
def test_login_and_refresh_are_retried_after_a_dropped_connection_and_5xx(cfg, fake, path):
    cfg = dataclasses.replace(cfg, http_backoff=0.01)
    fake.faults.path, fake.faults.disconnects, fake.faults.server_errors = path, 1, 2
    out = run_harvest_job(cfg, start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}],
                                          credentials=LOGIN))
    assert out.status["status"] == "completed success", out.status
    assert [status for status, _ in fake.faults.served] == [HANG_UP, 503, 503]
    assert len(fake.server.requests_to(path)) == len(fake.faults.served) + 1  # asked again after each failure
    assert out.count("posts") == len(fake.author_entries(ALICE))


def test_a_login_failing_past_the_retries_is_a_remote_error_not_a_refusal(cfg, fake):
    cfg = dataclasses.replace(cfg, http_retries=2, http_backoff=0.01)
    fake.faults.path, fake.faults.server_errors = "/xrpc/com.atproto.server.createSession", 10
    out = run_harvest_job(cfg, start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}],
                                          credentials=LOGIN))
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.REMOTE_ERROR, None)]
    assert len(fake.server.requests_to("/xrpc/com.atproto.server.createSession")) == cfg.http_retries + 1
    assert not fake.server.requests_to("/xrpc/app.bsky.feed.getAuthorFeed")


@pytest.mark.parametrize("fmt", ["tsv", "xlsx", "dehydrate", "json_full"])
def test_every_format_holds_every_feed_entry(cfg, fake, fmt):
    from tests.test_export import read_rows

    out = run_harvest_job(cfg, start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}],
                                          credentials=LOGIN))
    entries = fake.author_entries(ALICE)
    statuses: list[dict] = []
    ctx = JobContext(config=cfg, publish=lambda key, body: statuses.append(body), service="test")
    run_export({"id": "x", "type": "bluesky_author_feed", "collection": {"id": "c1"}, "path": "exports/x",
                "format": fmt, "dedupe": True, "segment_size": None}, routing_key="export.start.bluesky.x", ctx=ctx)
    assert statuses[-1]["status"] == "completed success", statuses[-1]
    (path,) = (cfg.data_root / "exports" / "x").iterdir()
    wanted = sorted(entry_key(e) for e in entries)
    if fmt == "dehydrate":
        assert sorted(path.read_text().split()) == wanted
    elif fmt == "json_full":  # each entry as the API sent it: the page's own bytes
        lines = path.read_bytes().splitlines()
        assert sorted(entry_key(json.loads(line)) for line in lines) == wanted
        pages = b"".join(body for _, _, body in out.records())
        assert all(line in pages for line in lines)
    else:
        rows = read_rows(path)
        assert sorted(r["id"] for r in rows) == wanted
        assert {r["author_handle"] for r in rows} == {e["post"]["author"]["handle"] for e in entries}


def test_a_shutdown_mid_feed_resumes_from_the_next_cursor_counting_each_post_once(config, fake, monkeypatch):
    import threading

    from swath.core.jobs import JobInterrupted
    from swath.harvesters.recorder import Recorder
    from swath.harvesters.run import run_harvest
    from tests.enginekit import context

    stopping = threading.Event()  # the engine has begun the shutdown: no new request will be sent
    begin_stop = Recorder.begin_stop

    def observed(self, *, shutdown: bool) -> None:
        begin_stop(self, shutdown=shutdown)
        stopping.set()

    monkeypatch.setattr(Recorder, "begin_stop", observed)

    cfg = config.with_api_url("bluesky", fake.url)
    body = start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}], credentials=LOGIN,
                      options={"incremental": True}, harvest_id="bsky:resume")
    path = "/xrpc/app.bsky.feed.getAuthorFeed"
    ctx, _ = context(cfg)
    serve = fake.server.routes[("GET", path)]

    def page_then_shutdown(req):  # the shutdown arrives while the second page is being answered
        if len(fake.server.requests_to(path)) == 2:
            ctx.shutdown.set()
            ctx.stop.set()
            assert stopping.wait(60)
        return serve(req)

    fake.server.routes[("GET", path)] = page_then_shutdown
    with pytest.raises(JobInterrupted):
        run_harvest(body, routing_key="harvest.start.bluesky.bluesky_author_feed", ctx=ctx)
    fake.server.routes[("GET", path)] = serve
    cursors = [r.arg("cursor") for r in fake.server.requests_to(path)]
    assert cursors == [None, str(fake.page_size)]

    out = run_harvest_job(cfg, body)  # the redelivery
    entries = fake.author_entries(ALICE)
    assert out.status["status"] == "completed success", out.status
    assert codes.HARVEST_RESUMED in [c for c, _ in out.codes("warnings")]
    assert out.count("posts") == len(entries) and out.count("users") == 1
    resumed = [r.arg("cursor") for r in fake.server.requests_to(path)][2:]
    assert resumed[0] == str(2 * fake.page_size)  # after the two pages in the first run's WARC
    assert len(fake.server.requests_to("/xrpc/app.bsky.actor.getProfile")) == 1  # the DID was a checkpoint
    assert out.status["uids"] == {"a": ALICE}
    again = run_harvest_job(cfg, {**body, "id": "bsky:resume-2"})  # the mark was set by the resumed run
    assert again.count("posts") == 0


def test_export_date_filter_and_segments(cfg, fake):
    run_harvest_job(cfg, start_body("bluesky_author_feed", [{"id": "a", "token": "alice.example.com"}],
                                    credentials=LOGIN))
    entries = fake.author_entries(ALICE)
    created = sorted(e["post"]["record"]["createdAt"] for e in entries)
    start = created[len(created) // 2]
    statuses: list[dict] = []
    ctx = JobContext(config=cfg, publish=lambda key, body: statuses.append(body), service="test")
    run_export({"id": "d", "type": "bluesky_author_feed", "collection": {"id": "c1"}, "path": "exports/d",
                "format": "csv", "dedupe": True, "segment_size": 10, "item_date_start": start},
               routing_key="export.start.bluesky.d", ctx=ctx)
    assert statuses[-1]["status"] == "completed success", statuses[-1]
    files = sorted((cfg.data_root / "exports" / "d").glob("*.csv"))
    rows = [row for path in files for row in csv.DictReader(path.open(newline="", encoding="utf-8"))]
    wanted = sorted(entry_key(e) for e in entries if e["post"]["record"]["createdAt"] >= start)
    assert sorted(r["id"] for r in rows) == wanted
    assert len(files) == -(-len(wanted) // 10) > 1
