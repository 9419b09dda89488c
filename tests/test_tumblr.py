"""Tumblr harvests through the engine against a fake Tumblr API v2 on 127.0.0.1."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from swath.messages import codes
from swath.messages.validation import InvalidMessage
from swath.platforms.tumblr.harvester import blog_host
from tests.fakes.social import run_harvest_job, start_body
from tests.fakes.tumblr import API_KEY, FakeTumblr, build_blogs


@pytest.fixture
def fake():
    with FakeTumblr() as server:
        yield server


@pytest.fixture
def cfg(config, fake):
    return config.with_api_url("tumblr", fake.url)


SEEDS = [{"id": "seed-gwu", "uid": "gwulibraries"}, {"id": "seed-arch", "uid": "archive.example.org"}]


def test_blog_host_appends_tumblr_com_only_to_bare_names():
    assert blog_host("gwulibraries") == "gwulibraries.tumblr.com"
    assert blog_host("https://Archive.Example.org/") == "archive.example.org"


def test_posts_are_paged_counted_and_replayed_byte_exact(cfg, fake):
    out = run_harvest_job(cfg, start_body("tumblr_blog_posts", SEEDS, credentials={"api_key": API_KEY}))

    assert out.status["status"] == "completed success", out.status
    expected = sum(len(fake.expected_posts(h)) for h in fake.blogs)
    assert out.count("posts") == expected
    # paged by offset, at most 20 a page
    gwu = fake.server.requests_to("/v2/blog/gwulibraries.tumblr.com/posts")
    expected_posts = fake.expected_posts("gwulibraries.tumblr.com")
    assert [int(r.arg("offset")) for r in gwu] == list(range(0, len(expected_posts), 20))
    # the WARC holds exactly the bodies the server sent, and no api key anywhere
    stored = Counter(body for _, status, body in out.records() if status == 200)
    assert stored == Counter(fake.bodies("/v2/blog/"))
    ids = [p["id"] for body in stored for p in json.loads(body)["response"]["posts"]]
    assert sorted(ids) == sorted(p["id"] for h in fake.blogs for p in fake.expected_posts(h))
    assert API_KEY.encode() not in out.raw_warc_bytes()
    assert len(out.warcs) == 1 and out.status["warcs"]["count"] == 1


def test_missing_blog_is_token_not_found_and_the_rest_is_harvested(cfg, fake):
    seeds = [{"id": "seed-gone", "token": "gone"}, SEEDS[1]]
    out = run_harvest_job(cfg, start_body("tumblr_blog_posts", seeds, credentials={"api_key": API_KEY}))

    assert out.status["status"] == "completed success"
    assert out.codes("warnings") == [(codes.TOKEN_NOT_FOUND, "seed-gone")]
    assert out.count("posts") == len(fake.expected_posts("archive.example.org"))


def test_incremental_second_run_fetches_only_new_posts(cfg, fake):
    body = start_body("tumblr_blog_posts", SEEDS[:1], credentials={"api_key": API_KEY},
                      options={"incremental": True})
    first = run_harvest_job(cfg, body)
    host = "gwulibraries.tumblr.com"
    assert first.count("posts") == len(fake.expected_posts(host))

    newer = build_blogs(counts={host: 3}, seed=99)[host].posts
    top = fake.blogs[host].posts[0]["id"]
    for i, post in enumerate(newer):  # three posts newer than anything harvested
        post["id"] = post["id_string"] = top + 1000 * (len(newer) - i)
        post["id_string"] = str(post["id"])
    fake.blogs[host].posts[:0] = newer
    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})

    assert second.status["status"] == "completed success"
    assert second.count("posts") == len(newer)


def test_rate_limit_waits_for_reset_and_continues(cfg, fake):
    fake.faults.rate_limited = 1
    out = run_harvest_job(cfg, start_body("tumblr_blog_posts", SEEDS[1:], credentials={"api_key": API_KEY}))

    assert fake.faults.served == [(429, "/v2/blog/archive.example.org/posts")]
    assert out.status["status"] == "completed success"
    assert out.count("posts") == len(fake.expected_posts("archive.example.org"))
    assert codes.RATE_LIMITED in [c for c, _ in out.codes("infos")]


def test_server_errors_then_success(cfg, fake):
    fake.faults.server_errors = 2
    out = run_harvest_job(cfg, start_body("tumblr_blog_posts", SEEDS[1:], credentials={"api_key": API_KEY}))

    assert [s for s, _ in fake.faults.served] == [503, 503]
    assert out.status["status"] == "completed success"
    assert out.count("posts") == len(fake.expected_posts("archive.example.org"))


def test_wrong_api_key_is_completed_failure_without_the_key(cfg, fake):
    out = run_harvest_job(cfg, start_body("tumblr_blog_posts", SEEDS, credentials={"api_key": "wrong-key-123"}))

    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.UNAUTHORIZED, None)]
    assert b"wrong-key-123" not in out.raw_warc_bytes()
    assert "wrong-key-123" not in json.dumps(out.sent)


def test_missing_api_key_is_a_clear_bad_request(cfg, fake):
    # refused with the message (the type declares the credentials it needs): the worker's failure status says so
    with pytest.raises(InvalidMessage, match="needs api_key") as caught:
        run_harvest_job(cfg, start_body("tumblr_blog_posts", SEEDS, credentials={}))

    assert caught.value.code == codes.SCHEMA_INVALID
    assert fake.server.requests == []
