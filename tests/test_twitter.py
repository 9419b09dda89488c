"""Twitter harvests: twarc's Twarc2 code paths, through the engine, against a fake Twitter API v2."""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from urllib.parse import urlsplit

import pytest

from swath.messages import codes
from swath.messages.validation import InvalidMessage
from tests.fakes.social import run_harvest_job, start_body
from tests.fakes.twitter import (
    ACCESS_TOKEN,
    ACCESS_TOKEN_SECRET,
    BEARER_TOKEN,
    CONSUMER_KEY,
    CONSUMER_SECRET,
    EPOCH,
    FakeTwitter,
    build_world,
    matches,
)

USER_AUTH = {"consumer_key": CONSUMER_KEY, "consumer_secret": CONSUMER_SECRET,
             "access_token": ACCESS_TOKEN, "access_token_secret": ACCESS_TOKEN_SECRET}
APP_AUTH = {"bearer_token": BEARER_TOKEN}
SECRETS = [CONSUMER_KEY, CONSUMER_SECRET, ACCESS_TOKEN, ACCESS_TOKEN_SECRET, BEARER_TOKEN]


@pytest.fixture
def fake():
    with FakeTwitter() as server:
        yield server


@pytest.fixture
def cfg(config, fake):
    return config.with_api_url("twitter", fake.url)


def pages_needed(n: int, size: int) -> int:
    return max(1, -(-n // size))


def assert_no_secrets(out) -> None:
    raw, sent = out.raw_warc_bytes(), json.dumps(out.sent)
    for secret in SECRETS:
        assert secret.encode() not in raw and secret not in sent


def test_spec_search_example_pages_each_query_with_user_auth(cfg, fake):
    # the spec's twitter_search example: two plain-string seeds, OAuth 1.0a user credentials
    seeds = [{"id": "32786222ef374eb38f1c5d56321c99e8", "token": "gwu"},
             {"id": "0e789cddd0fb41b5950f569676702182", "token": "gelman"}]
    out = run_harvest_job(cfg, start_body("twitter_search", seeds, credentials=USER_AUTH))

    assert out.status["status"] == "completed success", out.status
    hits = {q: [t for t in fake.world.tweets if matches(q, t)] for q in ("gwu", "gelman")}
    assert out.count("tweets") == sum(len(h) for h in hits.values())
    searches = fake.server.requests_to("/2/tweets/search/recent")
    assert len(searches) == sum(pages_needed(len(h), fake.page_size) for h in hits.values())
    assert all(r.headers["Authorization"].startswith("OAuth ") for r in searches)
    # the WARC replays what the server sent; the pages carry their expansions
    stored = [body for uri, status, body in out.records() if status == 200]
    assert Counter(stored) == Counter(fake.bodies("/2/tweets/search/recent"))
    pages = [json.loads(b) for b in stored]
    ids = sorted(t["id"] for p in pages for t in p["data"])
    assert ids == sorted(t["id"] for h in hits.values() for t in h)
    for page in pages:
        authors = {u["id"] for u in page["includes"]["users"]}
        assert {t["author_id"] for t in page["data"]} <= authors
    assert any("tweets" in p["includes"] for p in pages)  # quoted tweets expanded
    assert_no_secrets(out)


def test_academic_search_honours_time_window_and_limit(cfg, fake):
    start, end = EPOCH + dt.timedelta(hours=1), EPOCH + dt.timedelta(hours=6)
    window = {"query": "libraries", "start_time": start.strftime("%Y-%m-%dT%H:%M:%SZ"), "end_time": end.isoformat()}
    in_window = [t for t in fake.world.tweets if matches("libraries", t)
                 and start <= dt.datetime.fromisoformat(t["created_at"].replace("Z", "+00:00")) < end]
    assert len(in_window) > 3
    limit = len(in_window) - 2
    seeds = [{"id": "s1", "token": {**window, "limit": limit}}]
    out = run_harvest_job(cfg, start_body("twitter_academic_search", seeds, credentials=APP_AUTH))

    assert out.status["status"] == "completed success", out.status
    assert out.count("tweets") == limit
    first = fake.server.requests_to("/2/tweets/search/all")[0]
    assert first.arg("start_time").startswith(start.strftime("%Y-%m-%dT%H:%M:%S"))
    assert first.headers["Authorization"] == f"Bearer {BEARER_TOKEN}"


def test_query_operators_of_the_docs_example(cfg, fake):
    seed = {"id": "s1", "token": {"query": "#libraries lang:en", "start_time": EPOCH.isoformat(), "limit": 5000}}
    out = run_harvest_job(cfg, start_body("twitter_search_2", [seed], credentials=APP_AUTH))

    hits = [t for t in fake.world.tweets if matches("#libraries lang:en", t)]
    assert 0 < len(hits) < len([t for t in fake.world.tweets if "libraries" in t["text"]])
    assert out.count("tweets") == len(hits)


def test_incremental_search_sends_since_id_and_counts_only_new_tweets(cfg, fake):
    body = start_body("twitter_search_2", [{"id": "s1", "token": "archive"}], credentials=APP_AUTH,
                      options={"incremental": True})
    first = run_harvest_job(cfg, body)
    old = [t for t in fake.world.tweets if matches("archive", t)]
    assert first.count("tweets") == len(old)

    newer = [t for t in fake.world.live if matches("archive", t)]  # tweets posted since
    fake.world.tweets[:0] = list(reversed(fake.world.live))
    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})

    assert second.count("tweets") == len(newer) > 0
    since = {r.arg("since_id") for r in fake.server.requests_to("/2/tweets/search/recent")[-1:]}
    assert since == {max(t["id"] for t in old)}


def test_user_timelines_report_uids_renames_and_unusable_accounts(cfg, fake):
    seeds = [
        {"id": "s-renamed", "token": "gelman", "uid": "1480000000000000001"},
        {"id": "s-gwu", "token": "gwu"},
        {"id": "s-missing", "token": "nobody_here"},
        {"id": "s-suspended", "token": "suspended_acct"},
        {"id": "s-protected", "token": "private_acct"},
        {"id": "s-gone-uid", "token": "deleted", "uid": "99999"},
    ]
    out = run_harvest_job(cfg, start_body("twitter_user_timeline_2", seeds, credentials=APP_AUTH))

    assert out.status["status"] == "completed success", out.status
    assert out.status["token_updates"] == {"s-renamed": "GelmanLibrary"}
    assert out.status["uids"] == {"s-gwu": "17455195", "s-protected": "1500000000000000003"}
    assert sorted(out.codes("warnings")) == sorted([
        (codes.TOKEN_NOT_FOUND, "s-missing"), (codes.TOKEN_SUSPENDED, "s-suspended"),
        (codes.TOKEN_UNAUTHORIZED, "s-protected"), (codes.TOKEN_NOT_FOUND, "s-gone-uid")])
    authored = [t for t in fake.world.tweets if t["author_id"] in ("17455195", "1480000000000000001")]
    assert out.count("tweets") == len(authored)
    assert out.count("users") == 3  # gelman, gwu and the protected one were found
    assert fake.server.requests_to("/2/users/1500000000000000003/tweets") == []
    timeline = fake.server.requests_to("/2/users/17455195/tweets")
    assert len(timeline) == pages_needed(len([t for t in authored if t["author_id"] == "17455195"]), fake.page_size)
    assert [r.arg("pagination_token") is None for r in timeline] == [True] + [False] * (len(timeline) - 1)


def test_incremental_timeline_resumes_after_the_newest_tweet(cfg, fake):
    body = start_body("twitter_user_timeline_2", [{"id": "s1", "uid": "2244994945"}], credentials=APP_AUTH,
                      options={"incremental": True})
    first = run_harvest_job(cfg, body)
    mine = [t for t in fake.world.tweets if t["author_id"] == "2244994945"]
    assert first.count("tweets") == len(mine)

    fake.world.tweets[:0] = list(reversed(fake.world.live))
    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})

    assert second.count("tweets") == len([t for t in fake.world.live if t["author_id"] == "2244994945"])
    assert second.status["token_updates"] == {"s1": "TwitterDev"}  # a uid-only seed learns its name
    assert fake.server.requests_to("/2/users/2244994945/tweets")[-1].arg("since_id") == max(t["id"] for t in mine)


def test_rate_limit_waits_for_the_reset_header(cfg, fake):
    fake.faults.rate_limited = 1
    out = run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": "data"}], credentials=APP_AUTH))

    assert fake.faults.served == [(429, "/2/tweets/search/recent")]
    assert out.status["status"] == "completed success"
    assert out.count("tweets") == len([t for t in fake.world.tweets if matches("data", t)])
    assert codes.RATE_LIMITED in [c for c, _ in out.codes("infos")]


def test_server_errors_then_success(cfg, fake):
    fake.faults.server_errors = 2
    out = run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": "data"}], credentials=APP_AUTH))

    assert [s for s, _ in fake.faults.served] == [503, 503]
    assert out.status["status"] == "completed success"
    assert out.count("tweets") == len([t for t in fake.world.tweets if matches("data", t)])


def test_refused_credentials_are_completed_failure(cfg, fake):
    out = run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": "data"}],
                                          credentials={"bearer_token": "not-the-right-token"}))

    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.UNAUTHORIZED, None)]
    assert "not-the-right-token" not in json.dumps(out.sent)
    assert b"not-the-right-token" not in out.raw_warc_bytes()


def test_sample_stream_reconnects_after_a_drop_and_stores_every_byte(cfg, fake):
    out = run_harvest_job(cfg, start_body("twitter_sample", [], credentials=APP_AUTH), stop_when=fake.stream_done)

    assert out.status["status"] == "completed success", out.status
    assert fake.stream_connections == 2
    records = [body for uri, status, body in out.records() if urlsplit(uri).path == "/2/tweets/sample/stream"]
    recorded = b"".join(records)
    lines = [json.loads(line) for line in recorded.split(b"\r\n") if line.strip()]
    assert [m["data"]["id"] for m in lines] == [t["id"] for t in fake.world.live]
    sent = fake.wait_bodies("/2/tweets/sample/stream", 2)
    assert recorded.startswith(sent[0])  # the dropped connection is stored exactly as sent
    assert sent[1].startswith(recorded[len(sent[0]):])  # the second, up to where harvest.stop closed it
    assert b"\r\n\r\n" in recorded  # keep-alive blank lines are kept
    assert out.count("tweets") == len(fake.world.live)


def test_sample_stream_counts_every_tweet_across_a_drop(cfg, fake):
    out = run_harvest_job(cfg, start_body("twitter_sample", [], credentials=APP_AUTH), stop_when=fake.stream_done)

    assert fake.stream_connections == 2
    assert out.count("tweets") == len(fake.world.live)


def test_filter_stream_replaces_stale_rules_and_counts_matches(cfg, fake):
    fake.rules["1"] = {"id": "1", "value": "music", "tag": "left over"}
    fake.rules["2"] = {"id": "2", "value": "gwu", "tag": "gwu"}
    seeds = [{"id": "r1", "token": {"rule": "gwu", "tag": "gwu"}},
             {"id": "r2", "token": {"rule": "lecture", "tag": "talks"}}]
    # consumer key/secret only: an app token is obtained and used, and recorded nowhere
    creds = {"consumer_key": CONSUMER_KEY, "consumer_secret": CONSUMER_SECRET}
    out = run_harvest_job(cfg, start_body("twitter_filter_stream", seeds, credentials=creds),
                          stop_when=fake.stream_done)

    assert out.status["status"] == "completed success", out.status
    assert sorted((r["value"], r["tag"]) for r in fake.rules.values()) == [("gwu", "gwu"), ("lecture", "talks")]
    assert "2" in fake.rules  # a rule already in place is kept, not re-created
    expected = fake.expected_stream_tweets(filtered=True)
    recorded = b"".join(body for uri, _, body in out.records() if urlsplit(uri).path == "/2/tweets/search/stream")
    lines = [json.loads(line) for line in recorded.split(b"\r\n") if line.strip()]
    assert [m["data"]["id"] for m in lines] == [t["id"] for t in expected]
    assert all({r["tag"] for r in m["matching_rules"]} <= {"gwu", "talks"} for m in lines)
    assert out.count("tweets") == len(expected)
    assert_no_secrets(out)


def test_a_query_twitter_refuses_fails_that_seed_only(cfg, fake):
    seeds = [{"id": "bad", "token": "(gwu OR"}, {"id": "good", "token": "music"}]
    out = run_harvest_job(cfg, start_body("twitter_search_2", seeds, credentials=APP_AUTH))

    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.BAD_REQUEST, "bad")]
    assert "Invalid Request" in out.status["errors"][0]["message"]
    assert out.count("tweets") == len([t for t in fake.world.tweets if matches("music", t)])


def test_missing_credentials_are_a_clear_bad_request(cfg, fake):
    # refused with the message (the type declares the credentials it needs), never quoting a value
    with pytest.raises(InvalidMessage, match="consumer_secret") as caught:
        run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": "data"}],
                                        credentials={"consumer_key": CONSUMER_KEY}))

    assert caught.value.code == codes.SCHEMA_INVALID
    assert CONSUMER_KEY not in str(caught.value)


def test_fake_world_is_big_enough_to_page():
    world = build_world()
    assert sum(matches("gwu", t) for t in world.tweets) > 10  # more than one page of the default size
