"""Mastodon REST harvests (hashtag, account, public, search) through the engine and Mastodon.py against a fake
instance on 127.0.0.1, and their exports: expected posts are worked out from what the fake serves."""

from __future__ import annotations

import csv
import dataclasses
import json
import logging

import pytest

from swath.core.jobs import JobContext
from swath.exporters import registry as export_registry
from swath.exporters.base import run_export
from swath.messages import codes
from tests.fakes.mastodon import TOKEN, FakeMastodon
from tests.fakes.social import Outcome, run_harvest_job, start_body


@pytest.fixture
def fake():
    with FakeMastodon() as server:
        yield server


@pytest.fixture
def cfg(config, fake):
    return config.with_api_url("mastodon", fake.url)


def served_ids(out: Outcome) -> list[str]:
    """The ids of every status in the 200 answers the WARC holds (timeline pages and search results)."""
    ids = []
    for uri, status, body in out.records():
        if status != 200 or "/api/v1/instance" in uri or "/api/v2/instance" in uri or "/lookup" in uri:
            continue
        doc = json.loads(body)
        if isinstance(doc, dict) and "statuses" in doc:
            doc = doc["statuses"]
        if isinstance(doc, list):
            ids += [s["id"] for s in doc]
    return ids


def export_rows(config, harvest_type: str, fmt: str = "csv", path: str = "exports/m", **fields) -> tuple[dict, list]:
    """Export collection c1 (start_body's) into `path` and read the rows back (CSV, TSV, JSON lines, json_full;
    the ids of a dehydrate)."""
    published: list[tuple[str, dict]] = []
    ctx = JobContext(config=dataclasses.replace(config, status_interval=0.0),
                     publish=lambda key, body: published.append((key, body)), service="Test Exporter")
    body = {"id": "exp1", "type": harvest_type, "path": path, "format": fmt, "collection": {"id": "c1"}, **fields}
    run_export(body, routing_key=export_registry.start_routing_key(harvest_type), ctx=ctx)
    rows: list = []
    for file in sorted((config.data_root / path).glob("exp1_*")):
        if file.suffix in (".csv", ".tsv"):
            rows += list(csv.DictReader(file.open(newline="", encoding="utf-8"),
                                        delimiter="," if file.suffix == ".csv" else "\t"))
        elif file.suffix in (".json", ".jsonl"):
            rows += [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines()]
        else:
            rows += [{"id": line} for line in file.read_text().split()]
    return published[-1][1], rows


def test_hashtag_pages_by_link_headers_then_incremental_fetches_nothing_new(cfg, fake):
    body = start_body("mastodon_hashtag", [{"id": "s-lib", "token": "#libraries"}], credentials={},
                      options={"incremental": True})
    first = run_harvest_job(cfg, body)

    expected = [s["id"] for s in fake.tagged("libraries")]
    assert first.status["status"] == "completed success", first.status
    assert served_ids(first) == expected and first.count("posts") == len(expected)
    pages = fake.server.requests_to("/api/v1/timelines/tag/libraries")
    # 40 a page, each next page asked with the max_id of the Link header, the last (empty) one ends it
    assert [r.arg("max_id") for r in pages] == [None] + [expected[i - 1] for i in range(40, len(expected) + 1, 40)] \
        + ([expected[-1]] if len(expected) % 40 else [])
    assert all(r.arg("limit") == "40" for r in pages)

    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})
    again = fake.server.requests_to("/api/v1/timelines/tag/libraries")[len(pages):]
    assert second.status["status"] == "completed success"
    assert second.count("posts") == 0 and served_ids(second) == []
    assert [r.arg("since_id") for r in again] == [expected[0]]  # one request: only newer posts

    new = [fake.post("libraries", push=False)["id"] for _ in range(3)]
    third = run_harvest_job(cfg, {**body, "id": body["id"] + "-3"})
    assert served_ids(third) == new[::-1] and third.count("posts") == 3

    status, rows = export_rows(cfg, "mastodon_hashtag", dedupe=True)
    assert status["status"] == "completed success", status
    assert sorted(r["id"] for r in rows) == sorted(expected + new)  # every served post once


def test_export_columns_are_read_from_the_statuses(cfg, fake):
    out = run_harvest_job(cfg, start_body("mastodon_hashtag", [{"id": "s", "token": "libraries"}], credentials={}))
    assert out.status["status"] == "completed success"
    _, rows = export_rows(cfg, "mastodon_hashtag")
    by_id = {r["id"]: r for r in rows}
    assert list(by_id) == [s["id"] for s in fake.tagged("libraries")]
    for status in fake.tagged("libraries"):
        row = by_id[status["id"]]
        account = status["account"]
        handle = f"@{account['acct']}" if "@" in account["acct"] else f"@{account['acct']}@127.0.0.1"
        assert row["account_handle"] == handle
        assert row["account_display_name"] == account["display_name"]
        assert "<" not in row["text"] and "#libraries" in row["text"] and "&amp;" not in row["text"]
        assert row["hashtags"] == "libraries"
        assert row["media_urls"] == " ".join(m["url"] for m in status["media_attachments"])
        assert row["mentions"] == " ".join(m["acct"] for m in status["mentions"])
        assert row["content_warning"] == status["spoiler_text"]
        assert row["in_reply_to_id"] == (status["in_reply_to_id"] or "")
        assert row["quote_of_id"] == (status.get("quote") or {}).get("quoted_status", {}).get("id", "")
        assert row["edited_at"] == (status["edited_at"] or "")
        assert row["links"] == ((status["card"] or {}).get("url") or "")
    edited = [r for r in rows if r["edited_at"]]
    assert len(edited) == 1 and edited[0]["text"].startswith("Edited: on")


def test_account_by_address_reports_uid_boosts_and_moves(cfg, fake):
    seeds = [{"id": "s-alice", "token": "@alice"}, {"id": "s-dave", "token": {"instance": fake.url,
                                                                              "account": "@olddave"}},
             {"id": "s-bob", "uid": "1002", "token": "@bob"}, {"id": "s-none", "token": "@nobody"},
             {"id": "s-gone", "token": "@gone"}, {"id": "s-uid", "uid": "1003"}]
    out = run_harvest_job(cfg, start_body("mastodon_account", seeds, credentials={}))

    assert out.status["status"] == "completed success", out.status
    # found by address: the account ids (a suspended account is found; its statuses answer 410)
    assert out.status["uids"] == {"s-alice": "1001", "s-dave": "1004", "s-gone": "1005"}
    assert out.status["token_updates"] == {"s-dave": "@bob@" + fake.url.removeprefix("http://"),
                                           "s-uid": "@carol@remote.example"}  # a uid seed's address learnt
    assert sorted(out.codes("warnings")) == sorted([(codes.ACCOUNT_MOVED, "s-dave"), (codes.TOKEN_NOT_FOUND, "s-none"),
                                                    (codes.ACCOUNT_GONE, "s-gone")])
    mine = [s["id"] for s in fake.statuses if s["account"]["id"] in ("1001", "1002", "1003")]
    assert sorted(served_ids(out)) == sorted(mine) and out.count("posts") == len(mine)
    boosts = [s for s in fake.statuses if s["reblog"] and s["account"]["id"] == "1002"]
    _, rows = export_rows(cfg, "mastodon_account")
    assert [r["reblog_of_id"] for r in rows if r["reblog_of_id"]] == [b["reblog"]["id"] for b in boosts]


def test_public_local_timeline_and_only_media(cfg, fake):
    out = run_harvest_job(cfg, start_body("mastodon_public", [], credentials={},
                                          options={"local": True, "only_media": False, "limit": 50}))
    local = [s["id"] for s in fake.statuses if s["reblog"] is None and "@" not in s["account"]["acct"]]
    assert out.status["status"] == "completed success", out.status
    assert served_ids(out)[:50] == local[:50] and out.count("posts") == 50
    assert all(r.arg("local") == "1" for r in fake.server.requests_to("/api/v1/timelines/public"))

    seeds = [{"id": "s-url", "token": fake.url}, {"id": "s-name", "token": "fosstodon.org"}]
    named = run_harvest_job(cfg, start_body("mastodon_public", seeds, credentials={}, options={"limit": 5}))
    assert named.codes("errors") == [(codes.BAD_REQUEST, "s-name")] and named.count("posts") == 5


def test_search_needs_the_token_and_pages_by_offset(cfg, fake, caplog):
    caplog.set_level(logging.DEBUG)
    seeds = [{"id": "s-q", "token": "archive library"}]
    anonymous = run_harvest_job(cfg, start_body("mastodon_search", seeds, credentials={}))
    assert anonymous.codes("warnings") == [(codes.SEARCH_UNAVAILABLE, "s-q")] and anonymous.count("posts") == 0

    out = run_harvest_job(cfg, start_body("mastodon_search", seeds, credentials={"access_token": TOKEN}))
    wanted = [s["id"] for s in fake.statuses if s["reblog"] is None and "archive" in s["content"]
              and "library" in s["content"]]
    assert out.status["status"] == "completed success", out.status
    assert served_ids(out) == wanted and out.count("posts") == len(wanted) > 40
    offsets = [r.arg("offset") for r in fake.server.requests_to("/api/v2/search")[1:]]
    assert offsets == [None] + [str(n) for n in range(40, len(wanted) + 1, 40)] + \
        ([str(len(wanted))] if len(wanted) % 40 else [])
    # the token is redacted everywhere: WARC, statuses, logs
    assert TOKEN.encode() not in out.raw_warc_bytes()
    assert TOKEN not in json.dumps(out.sent)
    assert TOKEN not in caplog.text
    auth = [r.headers.get("Authorization") for r in fake.server.requests_to("/api/v2/search")[1:]]
    assert auth and all(a == f"Bearer {TOKEN}" for a in auth)


def test_wrong_token_is_unauthorized_for_that_seed_without_the_token(cfg, fake):
    out = run_harvest_job(cfg, start_body("mastodon_hashtag", [{"id": "s", "token": "libraries"}],
                                          credentials={"access_token": "wrong-token-4711"}))
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.UNAUTHORIZED, "s")]
    assert b"wrong-token-4711" not in out.raw_warc_bytes() and "wrong-token-4711" not in json.dumps(out.sent)


def test_rate_limit_waits_for_the_iso_reset_and_server_errors_are_retried(cfg, fake):
    fake.faults.rate_limited, fake.faults.server_errors = 1, 2
    out = run_harvest_job(cfg, start_body("mastodon_hashtag", [{"id": "s", "token": "archives"}], credentials={}))
    assert [s for s, _ in fake.faults.served] == [429, 503, 503]
    assert out.status["status"] == "completed success", out.status
    assert out.count("posts") == len(fake.tagged("archives"))
    assert codes.RATE_LIMITED in [c for c, _ in out.codes("infos")]


def test_a_dead_instance_fails_its_seed_and_the_others_go_on(cfg, fake):
    dead = "http://127.0.0.1:9"  # discard port: nothing listens
    seeds = [{"id": "s-dead", "token": {"instance": dead, "hashtag": "libraries"}},
             {"id": "s-ok", "token": "archives"}]
    out = run_harvest_job(dataclasses.replace(cfg, http_retries=1, http_backoff=0.01),
                          start_body("mastodon_hashtag", seeds, credentials={}))
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.INSTANCE_UNREACHABLE, "s-dead")]
    assert out.count("posts") == len(fake.tagged("archives"))


def test_a_token_for_an_instance_not_named_by_url_is_not_sent(cfg, fake):
    seeds = [{"id": "s", "token": "@carol@remote.example"}]
    out = run_harvest_job(dataclasses.replace(cfg, http_retries=0),
                          start_body("mastodon_account", seeds, credentials={"access_token@remote.example": TOKEN}))
    assert (codes.CREDENTIAL_UNUSED, None) in out.codes("warnings")
    assert TOKEN.encode() not in out.raw_warc_bytes()


def test_a_next_link_that_comes_back_is_a_pagination_loop_and_an_unknown_hashtag_is_not_found(cfg, fake):
    fake.loop_links = True
    seeds = [{"id": "s-loop", "token": "libraries"}, {"id": "s-none", "token": "nosuchtag"},
             {"id": "s-bad", "token": "x?local=1"}]
    out = run_harvest_job(cfg, start_body("mastodon_hashtag", seeds, credentials={}, options={"incremental": True}))
    pages = fake.server.requests_to("/api/v1/timelines/tag/libraries")
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.PAGINATION_LOOP, "s-loop"), (codes.BAD_REQUEST, "s-bad")]
    assert out.codes("warnings") == [(codes.TOKEN_NOT_FOUND, "s-none")]
    assert len(pages) == 2 and out.count("posts") == 80  # the first two pages; the repeated link is not followed
    again = run_harvest_job(cfg, start_body("mastodon_hashtag", seeds[:1], credentials={},
                                            options={"incremental": True}))
    assert fake.server.requests_to("/api/v1/timelines/tag/libraries")[len(pages)].arg("since_id") is None
    assert again.codes("errors") == [(codes.PAGINATION_LOOP, "s-loop")]  # no high-water mark from a broken run


def test_an_exhausted_window_is_waited_out_before_the_next_request_not_after_a_429(config):
    with FakeMastodon(statuses_per_tag=95, rate_limit=2, rate_window=1.0) as fake:
        cfg = config.with_api_url("mastodon", fake.url)
        out = run_harvest_job(cfg, start_body("mastodon_hashtag", [{"id": "s", "token": "archives"}], credentials={}))
        expected = [s["id"] for s in fake.tagged("archives")]
        pages = len(fake.server.requests_to("/api/v1/timelines/tag/archives"))
    assert out.status["status"] == "completed success", out.status
    assert served_ids(out) == expected and pages == 4  # 95 posts: 40 + 40 + 15, then the empty page
    assert fake.over_limit == 0  # X-RateLimit-Remaining 0 was honoured: no request past the budget
    assert out.count("rate_limit_waits") >= 1


def test_every_format_date_filters_and_segments(cfg, fake):
    out = run_harvest_job(cfg, start_body("mastodon_hashtag", [{"id": "s", "token": "archives"}], credentials={}))
    served = {}
    for _, status, body in out.records():
        if status == 200 and isinstance(doc := json.loads(body), list):
            served.update({s["id"]: s for s in doc})
    order = [s["id"] for s in fake.tagged("archives")]
    assert list(served) == order

    _, ids = export_rows(cfg, "mastodon_hashtag", "dehydrate", path="exports/ids")
    assert [r["id"] for r in ids] == order
    _, full = export_rows(cfg, "mastodon_hashtag", "json_full", path="exports/full")
    assert full == [served[i] for i in order]  # each status as the instance sent it
    _, tsv = export_rows(cfg, "mastodon_hashtag", "tsv", path="exports/tsv")
    assert [r["id"] for r in tsv] == order and all(r["account_handle"].startswith("@") for r in tsv)

    start, end = served[order[60]]["created_at"], served[order[20]]["created_at"]
    inside = [i for i in order if start <= served[i]["created_at"] <= end]  # both ends inclusive
    status, window = export_rows(cfg, "mastodon_hashtag", path="exports/window", item_date_start=start,
                                 item_date_end=end, segment_size=15)
    assert status["status"] == "completed success", status
    assert [r["id"] for r in window] == inside and len(inside) == 41
    assert len(list((cfg.data_root / "exports" / "window").glob("exp1_*.csv"))) == 3  # 41 rows, 15 a file


@pytest.mark.parametrize("body", [b'{"statuses": []}', b'[{"content": "no id"}]', b'[{"id": {"$oid": 1}}]', b"<html>"])
def test_a_page_that_is_not_a_list_of_posts_with_ids_fails_its_seed_only(cfg, fake, body):
    from tests.fakes.httpserver import Response

    fake.add_route("/api/v1/timelines/tag/empty", lambda req: Response(200, body))
    seeds = [{"id": "s-bad", "token": "empty"}, {"id": "s-ok", "token": "archives"}]
    out = run_harvest_job(cfg, start_body("mastodon_hashtag", seeds, credentials={}))
    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.BAD_RESPONSE, "s-bad")]
    assert out.count("posts") == len(fake.tagged("archives"))
    # the refused page is kept in the WARC as it came
    assert [b for uri, _, b in out.records() if "/timelines/tag/empty" in uri] == [body]
