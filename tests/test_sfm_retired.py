"""SFM 2.x harvest types whose APIs are gone, as SFM sites still schedule them: refused with api_retired and the
type to use, through a real worker on RabbitMQ (the status sfm-ui reads) and `swath harvest run`."""

from __future__ import annotations

import json
import uuid

import pytest

from swath.harvesters import registry
from swath.messages import codes
from swath.messages.retired import retired_types
from tests.brokerprobe import running_worker, until_final
from tests.test_cli import swath
from tests.test_sfm3_keys import SFM_UI_BINDINGS, mandatory_channel, publish_mandatory


def sfm2_start(harvest_type: str, root) -> dict:
    """sfm-ui 2.x's harvest.start for a v1 Twitter collection: OAuth 1 credentials, screen names as tokens."""
    set_id, collection_id = uuid.uuid4().hex, uuid.uuid4().hex
    return {"id": uuid.uuid4().hex, "type": harvest_type, "path": f"{root}/collection_set/{set_id}/{collection_id}",
            "seeds": [{"id": uuid.uuid4().hex, "token": "gelmanlibrary"}], "options": {},
            "credentials": {"consumer_key": "ck-8f2e", "consumer_secret": "cs-8f2e", "access_token": "at-8f2e",
                            "access_token_secret": "ats-8f2e"},
            "collection_set": {"id": set_id}, "collection": {"id": collection_id}}


@pytest.mark.parametrize("key", ["harvest.start.twitter.twitter_user_timeline.priority",
                                 "harvest.start.twitter.twitter_filter"])
def test_a_retired_type_gets_a_failure_status_naming_its_successor(config, broker, key):
    harvest_type = key.split(".")[3]
    sfm_ui = broker.queue(config.queue_prefix + "sfm_ui", SFM_UI_BINDINGS)
    body = sfm2_start(harvest_type, config.data_root)
    with running_worker(config, "twitter_harvester"), mandatory_channel(config) as channel:
        publish_mandatory(channel, config, key, body)  # raises if no queue took it
        received = until_final(broker, sfm_ui)
    status_key, final = received[-1]
    assert status_key == key.replace(".start.", ".status.")
    assert final["id"] == body["id"] and final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == [codes.API_RETIRED]
    assert retired_types()[harvest_type].use in final["errors"][0]["message"]
    assert "8f2e" not in json.dumps(final)  # no credential in the status
    assert not list(config.data_root.glob("**/*.warc.gz"))


def test_retired_types_are_refused_by_lookup_and_harvest_run(data_root):
    for name, retired in retired_types().items():
        with pytest.raises(registry.RetiredHarvestType) as info:
            registry.lookup(name)
        assert info.value.code == codes.API_RETIRED and (retired.use or "no harvest type") in info.value.message
    done = swath("harvest", "run", "--json", "-", data_root=data_root,
                 stdin=json.dumps({**sfm2_start("weibo_timeline", data_root), "credentials": {}}))
    assert done.returncode == 2, done.stderr
    assert codes.API_RETIRED in done.stdout + done.stderr
    assert registry.lookup("twitter_user_timeline_2").name == "twitter_user_timeline_2"  # the successor runs


def test_an_export_of_a_retired_type_still_runs(config, broker):
    """Retired for harvesting only: the WARCs SFM harvested with it still export (here: none, so no_warcs)."""
    sfm_ui = broker.queue(config.queue_prefix + "sfm_ui", SFM_UI_BINDINGS)
    export = {"id": uuid.uuid4().hex, "type": "weibo_timeline", "format": "csv", "segment_size": None,
              "dedupe": False, "path": f"{config.data_root}/export/x", "collection": {"id": uuid.uuid4().hex}}
    with running_worker(config, "weibo_exporter"), mandatory_channel(config) as channel:
        publish_mandatory(channel, config, "export.start.weibo.weibo_timeline", export)
        final = until_final(broker, sfm_ui)[-1][1]
    assert [e["code"] for e in final["errors"]] == [codes.NO_WARCS]
