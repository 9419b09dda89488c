"""SFM 3.x as the requester: the routing keys and message bodies its code publishes for Twitter API v2 work,
sent through the real RabbitMQ to swath's workers, and the statuses read back where SFM 3.x listens.

What SFM 3.x publishes and binds, from its source (github.com/gwu-libraries, tag 3.0.0):
- sfm-ui sfm/ui/jobs.py: harvest.start.<credential platform>.<harvest type>, plus ".priority" for
  PRIORITY_HARVEST_TYPES (sfm/sfm/settings/common.py) scheduled at most every 60 minutes;
  harvest.stop.<platform>.<type> for streaming collections.
- sfm-ui sfm/ui/export.py: export.start.<platform>.<export type>, the export type being the harvest type.
- sfm-ui sfm/ui/models.py Collection.HARVEST_TYPES_TO_PLATFORM: the four v2 types are platform "twitter2".
- sfm-ui sfm/message_consumer/management/commands/startconsumer.py: the sfm_ui queue's bindings.
- sfm-utils sfmutils/harvester.py, sfmutils/exporter.py: status key = start key with start -> status.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pika
import pika.exceptions
import pytest

from swath.messages import routing
from tests.brokerprobe import running_worker, until_final
from tests.fakes.twitter import BEARER_TOKEN, FakeTwitter, matches
from tests.test_e2e_broker import response_payloads

SFM_V2_PLATFORM = "twitter2"  # sfm-ui models.py Credential.TWITTER2
# sfm-ui models.py Collection.HARVEST_TYPES_TO_PLATFORM, the entries whose platform is Credential.TWITTER2
SFM_V2_TYPES = ["twitter_filter_stream", "twitter_academic_search", "twitter_search_2", "twitter_user_timeline_2"]
SFM_STREAMING_TYPES = ["twitter_filter_stream"]  # Collection.STREAMING_HARVEST_TYPES
# settings/common.py PRIORITY_HARVEST_TYPES (twitter_search, twitter_user_timeline are platform "twitter")
SFM_PRIORITY_TYPES = ["twitter_search", "twitter_user_timeline", "twitter_user_timeline_2", "twitter_search_2",
                      "twitter_academic_search"]
# startconsumer.py ROUTING_KEYS: what the SFM UI hears statuses and warc_created on
SFM_UI_BINDINGS = ["harvest.status.*", "harvest.status.*.*", "harvest.status.*.*.*", "warc_created",
                   "export.status.*", "export.status.*.*"]


def sfm_start_keys() -> list[str]:
    """Every harvest.start and export.start key SFM 3.x publishes for a twitter2 collection (jobs.py, export.py)."""
    keys = []
    for harvest_type in SFM_V2_TYPES:
        keys.append(f"harvest.start.{SFM_V2_PLATFORM}.{harvest_type}")
        if harvest_type in SFM_PRIORITY_TYPES:
            keys.append(f"harvest.start.{SFM_V2_PLATFORM}.{harvest_type}.priority")
        keys.append(f"export.start.{SFM_V2_PLATFORM}.{harvest_type}")
    return keys


def sfm_harvest_start(root: Path, harvest_type: str, seeds: list[dict], options: dict) -> dict:
    """The body sfm-ui jobs.collection_harvest builds, paths under SFM_COLLECTION_SET_DATA_DIR = root."""
    collection_set_id, collection_id = uuid.uuid4().hex, uuid.uuid4().hex
    return {
        "collection_set": {"id": collection_set_id},
        "collection": {"id": collection_id},
        "id": uuid.uuid4().hex,
        "path": os.path.join(str(root), "collection_set", collection_set_id, collection_id),
        # forms.CredentialTwitter2Form.to_token: every field, the ones left empty as None
        "credentials": {"consumer_key": None, "consumer_secret": None, "access_token": None,
                        "access_token_secret": None, "bearer_token": BEARER_TOKEN},
        "type": harvest_type,
        "options": options,
        "seeds": seeds,
    }


def sfm_export_start(root: Path, export_type: str, collection_id: str) -> dict:
    """The body sfm-ui export.request_export builds for a whole collection (models.Export.save sets path)."""
    export_id = uuid.uuid4().hex
    return {"id": export_id, "type": export_type, "format": "csv", "segment_size": 250000, "dedupe": False,
            "path": f"{root}/export/{export_id}", "collection": {"id": collection_id}}


@contextlib.contextmanager
def mandatory_channel(config) -> Iterator[pika.adapters.blocking_connection.BlockingChannel]:
    """A channel whose basic_publish raises UnroutableError when no queue is bound for the key."""
    connection = pika.BlockingConnection(pika.URLParameters(config.amqp_url))
    try:
        channel = connection.channel()
        channel.confirm_delivery()
        yield channel
    finally:
        connection.close()


def publish_mandatory(channel, config, routing_key: str, body: dict) -> None:
    # as kombu's Producer.publish sends it for sfm-ui: JSON, persistent
    channel.basic_publish(config.exchange, routing_key, json.dumps(body).encode(),
                          pika.BasicProperties(content_type="application/json", delivery_mode=2), mandatory=True)


def test_priority_suffix_parses_and_its_status_keeps_it():
    start = "harvest.start.twitter2.twitter_search_2.priority"
    assert routing.status_key_for(start) == start.replace("start", "status")  # sfmutils' own derivation
    assert str(routing.parse(start)) == start
    assert routing.parse(start).type == "twitter_search_2"
    for bad in ("export.start.twitter2.twitter_search_2.priority",
                "harvest.stop.twitter2.twitter_filter_stream.priority",
                "harvest.start.twitter2.twitter_search_2.urgent"):
        with pytest.raises(routing.BadRoutingKey):
            routing.parse(bad)


def test_every_sfm3_twitter2_key_is_routable_after_broker_setup(config, broker):
    env = {**os.environ, "SWATH_EXCHANGE": config.exchange, "SWATH_DEAD_LETTER_EXCHANGE": config.dead_letter_exchange,
           "SWATH_DEAD_LETTER_QUEUE": config.dead_letter_queue, "SWATH_STATUS_QUEUE": config.status_queue,
           "SWATH_QUEUE_PREFIX": config.queue_prefix, "SWATH_AMQP_URL": config.amqp_url}
    setup = subprocess.run([sys.executable, "-m", "swath", "--data-root", str(config.data_root), "broker", "setup",
                            "--json"], check=False, capture_output=True, text=True, env=env, timeout=120)
    assert setup.returncode == 0, setup.stderr
    declared = {q["queue"]: q["bindings"] for q in json.loads(setup.stdout)["queues"]}
    keys = sfm_start_keys()  # 4 harvest.start, 3 of them also with .priority, 4 export.start
    with mandatory_channel(config) as channel:
        for key in keys:
            publish_mandatory(channel, config, key, {"id": f"probe:{key}"})  # raises if it routed nowhere
        with pytest.raises(pika.exceptions.UnroutableError):  # the check can fail: SFM never sends this one
            publish_mandatory(channel, config, "harvest.start.twitter2.twitter_sample", {"id": "probe:none"})
    # each went to the worker queue of its kind, once
    assert broker.depth(config.queue_prefix + "twitter_harvester") == sum(k.startswith("harvest.") for k in keys)
    assert broker.depth(config.queue_prefix + "twitter_exporter") == sum(k.startswith("export.") for k in keys)
    assert set(declared) >= {config.queue_prefix + "twitter_harvester", config.queue_prefix + "twitter_exporter"}
    assert "harvest.start.twitter.*" in declared[config.queue_prefix + "twitter_harvester"]  # swath's own keys stay


def test_sfm3_twitter_search_2_harvest_and_export_through_rabbitmq(config, broker):
    sfm_ui = broker.queue(config.queue_prefix + "sfm_ui", SFM_UI_BINDINGS)
    with FakeTwitter() as fake:
        config = config.with_api_url("twitter", fake.url)
        harvest = sfm_harvest_start(config.data_root, "twitter_search_2",
                                    [{"id": uuid.uuid4().hex, "token": {"query": "gwu"}}], {"incremental": True})
        with running_worker(config, "twitter_harvester"), mandatory_channel(config) as channel:
            publish_mandatory(channel, config, "harvest.start.twitter2.twitter_search_2", harvest)
            messages = until_final(broker, sfm_ui)
            # an hourly collection's next harvest, as jobs.py sends it
            again = {**harvest, "id": uuid.uuid4().hex}
            publish_mandatory(channel, config, "harvest.start.twitter2.twitter_search_2.priority", again)
            priority_messages = until_final(broker, sfm_ui)
            for stream_type in SFM_STREAMING_TYPES:  # a stream collection's stop reaches the harvester's stop queue
                publish_mandatory(channel, config, f"harvest.stop.{SFM_V2_PLATFORM}.{stream_type}",
                                  {"id": uuid.uuid4().hex})
        hits = [t for t in fake.world.tweets if matches("gwu", t)]

    statuses = [(key, body) for key, body in messages if key != "warc_created"]
    assert {key for key, _ in statuses} == {"harvest.status.twitter2.twitter_search_2"}
    assert statuses[0][1]["status"] == "running" and all(body["id"] == harvest["id"] for _, body in statuses)
    final = statuses[-1][1]
    assert final["status"] == "completed success", final
    assert sum(day.get("tweets", 0) for day in final["stats"].values()) == len(hits) > 0
    warcs = [body for key, body in messages if key == "warc_created"]
    assert warcs and all(w["harvest"] == {"id": harvest["id"], "type": "twitter_search_2"} for w in warcs)
    paths = [Path(w["warc"]["path"]) for w in warcs]
    for warc, path in zip(warcs, paths):
        assert path.is_relative_to(Path(harvest["path"]).resolve())  # in the collection's SFM directory
        assert hashlib.sha1(path.read_bytes()).hexdigest() == warc["warc"]["sha1"]
    assert final["warcs"] == {"count": len(paths), "bytes": sum(p.stat().st_size for p in paths)}
    stored_ids = sorted(t["id"] for body in response_payloads(paths) for t in json.loads(body).get("data", []))
    assert stored_ids == sorted(t["id"] for t in hits)

    priority_keys = {key for key, _ in priority_messages if key != "warc_created"}
    assert priority_keys == {"harvest.status.twitter2.twitter_search_2.priority"}
    assert priority_messages[-1][1]["status"] == "completed success", priority_messages[-1][1]
    # sfm_ui_consumer.py parses date_ended whenever it is present
    for key, body in statuses + priority_messages:
        assert key == "warc_created" or body.get("date_ended", "") is not None

    export = sfm_export_start(config.data_root, "twitter_search_2", harvest["collection"]["id"])
    with running_worker(config, "twitter_exporter"), mandatory_channel(config) as channel:
        publish_mandatory(channel, config, "export.start.twitter2.twitter_search_2", export)
        exported = until_final(broker, sfm_ui)
    assert {key for key, _ in exported} == {"export.status.twitter2.twitter_search_2"}
    assert exported[0][1]["status"] == "running"
    assert exported[-1][1]["status"] == "completed success", exported[-1][1]
    files = sorted(Path(export["path"]).glob("*.csv"))
    assert len(files) == 1
    with files[0].open(newline="", encoding="utf-8") as fh:
        assert sorted(row["id"] for row in csv.DictReader(fh)) == stored_ids
