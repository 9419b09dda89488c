"""The two seed-style harvest.start examples of docs/messages.md (the SFM spec's own), published through
the real RabbitMQ to the real Flickr and Twitter workers talking to local fakes of the APIs."""

from __future__ import annotations

import json
from pathlib import Path

from swath.messages.broker import Publisher
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import warcio_check
from tests.fakes.flickr import FakeFlickr
from tests.fakes.twitter import FakeTwitter, matches
from tests.test_messages import doc_examples


def docs_example(type_: str, data_root: Path) -> dict:
    body = next(b for name, b in doc_examples() if name == "harvest_start" and b["type"] == type_)
    # The example's /sfm-data path is another deployment's data root; keep its collection layout under ours.
    return {**body, "path": str(data_root / body["path"].removeprefix("/sfm-data/"))}


def harvest_through_broker(config, broker, worker: str, routing_key: str, body: dict) -> list[tuple[str, dict]]:
    with running_worker(config, worker), Publisher(config=config) as requester:
        requester.publish(routing_key, body).result(120)
        return until_final(broker, config.status_queue, timeout=120)


def counted(final: dict, label: str) -> int:
    return sum(day.get(label, 0) for day in final["stats"].values())


def warcs_of(messages: list[tuple[str, dict]]) -> list[Path]:
    return [Path(body["warc"]["path"]) for key, body in messages if key == "warc_created"]


def assert_no_credentials(body: dict, messages: list[tuple[str, dict]], warcs: list[Path]) -> None:
    wire = json.dumps(messages)
    for secret in body["credentials"].values():
        assert secret not in wire
        assert all(secret.encode() not in path.read_bytes() for path in warcs)


def test_flickr_user_example_through_rabbitmq(config, broker):
    with FakeFlickr() as fake:
        config = config.with_api_url("flickr", fake.url)
        body = docs_example("flickr_user", config.data_root)
        messages = harvest_through_broker(config, broker, "flickr_harvester", "harvest.start.flickr.flickr_user", body)
        people = list(fake.people.values())

    final = messages[-1][1]
    assert final["status"] == "completed success", final
    assert counted(final, "photos") == sum(len(p.photos) for p in people)
    # the seed given only a token gets its NSID reported
    token_only = next(s for s in body["seeds"] if "uid" not in s)
    nsid = next(p.nsid for p in people if p.username == token_only["token"])
    assert final["uids"] == {token_only["id"]: nsid}
    warcs = warcs_of(messages)
    assert warcs and final["warcs"]["count"] == len(warcs)
    assert warcio_check(warcs).returncode == 0
    assert_no_credentials(body, messages, warcs)


def test_twitter_search_example_through_rabbitmq(config, broker):
    with FakeTwitter() as fake:
        config = config.with_api_url("twitter", fake.url)
        body = docs_example("twitter_search", config.data_root)
        messages = harvest_through_broker(config, broker, "twitter_harvester",
                                          "harvest.start.twitter.twitter_search", body)
        tweets = fake.world.tweets

    final = messages[-1][1]
    assert final["status"] == "completed success", final
    queries = [seed["token"] for seed in body["seeds"]]
    assert counted(final, "tweets") == sum(1 for q in queries for t in tweets if matches(q, t))
    warcs = warcs_of(messages)
    assert warcs and warcio_check(warcs).returncode == 0
    assert_no_credentials(body, messages, warcs)
