"""Hostile values through the real harvesters, against fake servers on 127.0.0.1: JSON nested too deeply
and ids that are not strings. Each harvest ends within a deadline with exactly one final status and a
stable code (`bad_response` for the document or the seed), its WARCs complete; a worker keeps serving.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from swath.harvesters.base import Harvest
from swath.harvesters.outcome import harvest_status
from swath.harvesters.recorder import Recorder
from swath.messages import codes
from swath.messages.broker import Publisher
from swath.messages.model import COMPLETED_FAILURE, HarvestStart, Origin, now_iso
from tests.fakes.flickr import API_KEY as FLICKR_KEY
from tests.fakes.flickr import API_SECRET as FLICKR_SECRET
from tests.fakes.flickr import FakeFlickr
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.fakes.social import start_body
from tests.fakes.tumblr import API_KEY as TUMBLR_KEY
from tests.fakes.tumblr import FakeTumblr
from tests.fakes.twitter import BEARER_TOKEN, FakeTwitter
from tests.reliability.kit import (
    GENERIC_SECRET,
    Collector,
    WorkerProcess,
    declare_queues,
    worker_env,
)
from tests.reliability.test_hostile import DeadLetters
from tests.reliability.test_hostile_pages import DEADLINE, assert_one_clean_end, run_within

pytestmark = pytest.mark.reliability

NESTED = b"[" * 100_000 + b"]" * 100_000  # far deeper than Python's parser recurses


# ---- documents nested too deeply -------------------------------------------------------------------


class NestedTwitter(FakeTwitter):
    def search(self, req: Request) -> Response:
        return Response(200, NESTED)


class NestedTumblr(FakeTumblr):
    def posts(self, req: Request) -> Response:
        return Response(200, NESTED)


class NestedFlickr(FakeFlickr):
    def person_info(self, params: dict) -> Response:
        return Response(200, NESTED)


def _nested_generic(config):
    with FakeServer({"/nested": lambda req: Response(200, NESTED)}) as server:
        yield config, start_body("generic_pages", [{"id": "seed-1", "token": f"{server.url}/nested"}],
                                 credentials={"api_key": GENERIC_SECRET})


def _nested_social(fake_cls, platform: str, harvest_type: str, seeds: list[dict], credentials: dict):
    def make(config):
        with fake_cls() as fake:
            yield config.with_api_url(platform, fake.url), start_body(harvest_type, seeds, credentials=credentials)
    return make


NESTED_CASES = {
    "generic": _nested_generic,
    "tumblr": _nested_social(NestedTumblr, "tumblr", "tumblr_blog_posts", [{"id": "seed-1", "uid": "gwulibraries"}],
                             {"api_key": TUMBLR_KEY}),
    "twitter": _nested_social(NestedTwitter, "twitter", "twitter_search_2", [{"id": "seed-1", "token": "gwu"}],
                              {"bearer_token": BEARER_TOKEN}),
    "flickr": _nested_social(NestedFlickr, "flickr", "flickr_user", [{"id": "seed-1", "uid": "131866249@N02"}],
                             {"key": FLICKR_KEY, "secret": FLICKR_SECRET}),
}


@pytest.mark.parametrize("platform", sorted(NESTED_CASES))
def test_json_nested_too_deeply_is_a_bad_response(config, platform):
    for cfg, body in NESTED_CASES[platform](config):
        out = run_within(cfg, body)
    responses = assert_one_clean_end(out, cfg.data_root / "collections/cs1/c1")
    assert out.status["status"] == COMPLETED_FAILURE
    assert [code for code, _ in out.codes("errors")] == [codes.BAD_RESPONSE]
    assert "nested too deeply" in out.status["errors"][0]["message"]
    assert "Traceback" not in json.dumps(out.sent)
    assert NESTED in [payload for _, payload in responses]  # what the server sent is in the complete WARC


# ---- ids that are not strings ----------------------------------------------------------------------


class OddIdFlickr(FakeFlickr):
    """findByUsername answers an object as the NSID for `library_of_congress`."""

    def find_by_username(self, params: dict) -> Response:
        if params.get("username") != "library_of_congress":
            return super().find_by_username(params)
        return self._ok({"user": {"id": 1, "nsid": {"$oid": "671366249@N03"}}})


def test_a_flickr_nsid_that_is_not_text_fails_that_seed_only(config):
    with OddIdFlickr() as fake:
        cfg = config.with_api_url("flickr", fake.url)
        seeds = [{"id": "seed-odd", "token": "library_of_congress"}, {"id": "seed-ok", "token": "justin.littman"}]
        out = run_within(cfg, start_body("flickr_user", seeds, credentials={"key": FLICKR_KEY,
                                                                             "secret": FLICKR_SECRET}))
    assert_one_clean_end(out, cfg.data_root / "collections/cs1/c1")
    assert out.codes("errors") == [(codes.BAD_RESPONSE, "seed-odd")]
    assert out.status["uids"] == {"seed-ok": fake.person("justin.littman").nsid}
    assert out.count("photos") == len(fake.person("justin.littman").photos)


def test_the_ledger_turns_numbers_into_text_and_refuses_other_values(config, data_root):
    """Whatever a platform hands in as a uid or token update, the status it makes still validates."""
    start = HarvestStart.from_dict(start_body("generic_pages", [{"id": "s1", "token": "x"}], credentials={}))
    (data_root / "coll").mkdir()
    recorder = Recorder(start=start, config=config, directory=data_root / "coll")
    harvest = Harvest(recorder=recorder)
    odd: dict[str, object] = {"s-int": 17455195, "s-float": 2.0, "s-obj": {"id": "1"}, "s-null": None,
                              "s-list": ["a"], "s-bool": True, "s-empty": "", "s-text": "gwu"}
    try:
        for seed_id, value in odd.items():
            harvest.uid_found(seed_id, value)  # type: ignore[arg-type]
            harvest.token_update(seed_id, value)  # type: ignore[arg-type]
        status = harvest_status(harvest_id=start.id, status=COMPLETED_FAILURE, started=now_iso(), warcs=[],
                                origin=Origin(service="test", host="h", instance="1"), ledger=recorder.ledger.view())
        body = status.to_dict()  # validates against the schema
    finally:
        recorder.finish(final=True)
        recorder.close()
    kept = {"s-int": "17455195", "s-float": "2", "s-text": "gwu"}
    assert body["uids"] == kept and body["token_updates"] == kept
    refused = sorted(set(odd) - set(kept))
    assert sorted({e["seed_id"] for e in body["errors"]}) == refused
    assert {e["code"] for e in body["errors"]} == {codes.BAD_RESPONSE}


# ---- a worker subprocess keeps serving after an API's odd uid --------------------------------------


class OddUidTwitter(FakeTwitter):
    """User lookup by username answers gwu's id as a JSON number and TwitterDev's as an object."""

    def users_by_username(self, req: Request) -> Response:
        answer = json.loads(super().users_by_username(req).body)
        for user in answer.get("data", []):
            if user["username"] == "gwu":
                user["id"] = int(user["id"])
            elif user["username"] == "TwitterDev":
                user["id"] = {"id": user["id"]}
        return self._json(answer)


def test_a_worker_given_non_string_uids_reports_them_and_serves_on(config, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    with OddUidTwitter() as fake:
        cfg = dataclasses.replace(config.with_api_url("twitter", fake.url), http_retries=1, http_backoff=0.01)
        declare_queues(cfg, ["twitter_harvester"])
        worker = WorkerProcess(config=cfg, name="twitter_harvester", log_dir=logs, env=worker_env(cfg)).start()
        gwu = next(u for u in fake.world.users.values() if u["username"] == "gwu")
        odd = start_body("twitter_user_timeline_2", [{"id": "seed-num", "token": "gwu"},
                                                     {"id": "seed-obj", "token": "TwitterDev"}],
                         credentials={"bearer_token": BEARER_TOKEN}, path="odd/uids")
        plain = start_body("twitter_user_timeline_2", [{"id": "seed-uid", "uid": gwu["id"]}],
                           credentials={"bearer_token": BEARER_TOKEN}, path="odd/after")
        dead = DeadLetters(cfg)
        try:
            with Collector(config=cfg, queue=cfg.queue_prefix + "requester") as got, Publisher(config=cfg) as pub:
                assert got.wait(worker.ready, DEADLINE), worker.log_text()[-3000:]
                pub.publish("harvest.start.twitter.twitter_user_timeline_2", odd).result(DEADLINE)
                assert got.wait(lambda: odd["id"] in got.finals(), DEADLINE), worker.log_text()[-3000:]
                pub.publish("harvest.start.twitter.twitter_user_timeline_2", plain).result(DEADLINE)
                assert got.wait(lambda: plain["id"] in got.finals(), DEADLINE), worker.log_text()[-3000:]
                finals = got.finals()
            dead.poll()
            assert worker.alive(), worker.log_text()[-3000:]
        finally:
            dead.close()
            assert worker.stop() == 0
    assert [json.loads(raw).get("id") for raw, _ in dead.seen] == []  # nothing dead-lettered (no schema_invalid)
    (final,) = finals[odd["id"]]
    assert final["status"] == COMPLETED_FAILURE
    assert [(e["code"], e.get("seed_id")) for e in final["errors"]] == [(codes.BAD_RESPONSE, "seed-obj")]
    assert final["uids"] == {"seed-num": gwu["id"]}  # the number, as its decimal string
    tweets_of_gwu = sum(1 for t in fake.world.tweets if t["author_id"] == gwu["id"])
    assert sum(day.get("tweets", 0) for day in final["stats"].values()) == tweets_of_gwu
    assert not list((cfg.data_root / "odd").rglob("*.open"))
    (after,) = finals[plain["id"]]
    assert after["status"] == "completed success", after["errors"]
