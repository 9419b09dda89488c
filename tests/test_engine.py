"""The harvest engine on REST harvests: message flow, WARC contents, secrets, errors, state."""

from __future__ import annotations

import dataclasses
import json
import logging
import time

import pytest
import requests

from swath.harvesters.registry import UnknownHarvestType, harvester_types, lookup
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.messages.validation import InvalidMessage
from tests.enginekit import (
    BEARER,
    SECRET,
    PagedApi,
    context,
    page_item_ids,
    raw_bytes,
    read_records,
    routing_key,
    start_message,
    warc_files,
    warcio_check,
)
from tests.fakes.httpserver import FakeServer, Response


@pytest.fixture
def server():
    with FakeServer() as srv:
        yield srv


def test_rest_flow_running_warc_then_final_and_every_page_in_the_warc(config, data_root, server, caplog):
    api = PagedApi(server, pages=4, per_page=3)
    ctx, published = context(config)
    caplog.set_level(logging.DEBUG)
    run_harvest(start_message(server.url + "/pages", credentials={"api_key": SECRET, "bearer_token": BEARER}),
                routing_key=routing_key(), ctx=ctx)

    assert published.flow() == ["running", "warc", "completed success"]
    assert {k for k, _ in published.messages} == {"harvest.status.generic.generic_pages", "warc_created"}
    files = warc_files(data_root)
    assert [w["warc"]["path"] for w in published.warcs] == [str(p) for p in files]
    warc = published.warcs[0]
    assert warc["harvest"] == {"id": "test:1", "type": "generic_pages"}
    assert warc["collection"] == {"id": "coll-1"} and warc["collection_set"] == {"id": "set-1"}
    assert warc["warc"]["bytes"] == files[0].stat().st_size
    final = published.statuses[-1]
    assert final["warcs"] == {"count": 1, "bytes": files[0].stat().st_size}
    assert sum(day["items"] for day in final["stats"].values()) == len(api.served)
    assert final["service"] == "Generic Harvester" and final["host"] == config.host and final["date_ended"]

    # path layout: <path>/YYYY/MM/DD/HH/<safe id>-<stamp>-<serial>.warc.gz, no colon from "test:1"
    rel = files[0].relative_to(data_root / "coll")
    assert len(rel.parts) == 5 and ":" not in rel.name and rel.name.endswith("-00001.warc.gz")
    assert warcio_check(files).returncode == 0
    records = read_records(files)
    assert records[0][0] == "warcinfo"
    assert [r[0] for r in records[1:]] == ["request", "response"] * len(server.requests)
    assert page_item_ids(files) == api.served
    for rtype, _, _, http_headers, _, rec_headers in records[1:]:
        assert rec_headers.get_header("WARC-Payload-Digest", "").startswith("sha1:")
        if rtype == "response":
            assert http_headers.get_header("Content-Type") == "application/json"
    # the response body is byte-exact: the same bytes the server produced for that page
    first_response = next(r for r in records if r[0] == "response")
    assert json.loads(first_response[4])["next"] == "/pages?page=2"

    # the secrets were sent (the fake checked api_key) but are nowhere in the WARC or the logs
    assert server.requests[0].headers["Authorization"] == f"Bearer {BEARER}"
    data = raw_bytes(files)
    for secret in (SECRET, BEARER):
        assert secret.encode() not in data
        assert secret not in caplog.text
        assert secret not in json.dumps(published.messages)
    assert b"api_key=REDACTED" in data and b"Bearer REDACTED" in data
    assert "api_key=REDACTED" in caplog.text  # urllib3's own debug line, redacted


def test_state_commits_after_the_warc_and_incremental_sends_since_id(config, data_root, server):
    api = PagedApi(server, pages=2, per_page=3)
    message = start_message(server.url + "/pages", options={"incremental": True})
    ctx, published = context(config)
    run_harvest(message, routing_key=routing_key(), ctx=ctx)
    state = json.loads((data_root / "coll" / "swath-state.json").read_text())
    assert state["generic:since_id:seed-1"] == max(api.served)
    assert not any(k.startswith("harvest:") or k.startswith("generic:cursor") for k in state)

    first_run = len(api.served)
    ctx, published = context(config)
    run_harvest(dict(message, id="test:2"), routing_key=routing_key(), ctx=ctx)
    assert server.requests[-2].query["since_id"] == [str(first_run - 1)]
    assert len(api.served) == first_run  # nothing newer than since_id
    assert published.statuses[-1]["status"] == "completed success"


def test_path_outside_data_root_is_refused_with_its_code(config, data_root, server, tmp_path):
    PagedApi(server, pages=1)
    for path in ("/etc", "../outside", str(tmp_path)):
        ctx, published = context(config)
        run_harvest(start_message(server.url + "/pages", path=path), routing_key=routing_key(), ctx=ctx)
        assert published.kinds() == ["completed failure"]
        assert [e["code"] for e in published.statuses[0]["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT]
    assert server.requests == [] and warc_files(tmp_path) == []


def test_unauthorized_ends_in_failure_and_keeps_the_exchange(config, data_root, server):
    PagedApi(server, pages=2)
    ctx, published = context(config)
    run_harvest(start_message(server.url + "/pages", credentials={"api_key": "wrong-key-123"}),
                routing_key=routing_key(), ctx=ctx)
    assert published.flow() == ["running", "warc", "completed failure"]
    assert [e["code"] for e in published.statuses[-1]["errors"]] == [codes.UNAUTHORIZED]
    statuses = [r[2] for r in read_records(warc_files(data_root)) if r[0] == "response"]
    assert statuses == ["401"] and len(server.requests) == 1
    assert b"wrong-key-123" not in raw_bytes(warc_files(data_root))


@pytest.mark.parametrize("header", ["x-rate-limit-reset", "Retry-After"])
def test_429_waits_for_the_reset_header_then_goes_on(config, data_root, server, header):
    api = PagedApi(server, pages=2, per_page=2)
    calls = []

    def limited(request):
        calls.append(time.time())
        if len(calls) == 1:
            value = str(int(time.time()) + 1) if header == "x-rate-limit-reset" else "1"
            return Response(429, b'{"error": "slow down"}', headers={header: value})
        return api.handle(request)

    server.route("/pages")(limited)
    ctx, published = context(config)
    run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    final = published.statuses[-1]
    assert final["status"] == "completed success"
    assert [i["code"] for i in final["infos"]] == [codes.RATE_LIMITED]
    assert calls[1] - calls[0] >= 0.9  # it waited for the reset, not a quick retry
    assert [r[2] for r in read_records(warc_files(data_root)) if r[0] == "response"] == ["429", "200", "200"]
    assert page_item_ids(warc_files(data_root)) == api.served


def test_5xx_is_retried_then_gives_up_with_remote_error(config, data_root, server):
    api = PagedApi(server, pages=1, per_page=2)
    failures = {"left": 2}

    def flaky(request):
        if failures["left"]:
            failures["left"] -= 1
            return Response(503, b"busy")
        return api.handle(request)

    server.route("/pages")(flaky)
    config = dataclasses.replace(config, http_retries=2, http_backoff=0.05)
    ctx, published = context(config)
    run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    assert published.statuses[-1]["status"] == "completed success"
    assert page_item_ids(warc_files(data_root)) == api.served

    server.route("/pages")(lambda request: Response(502, b"down"))
    ctx, published = context(config)
    run_harvest(start_message(server.url + "/pages", harvest_id="test:2"), routing_key=routing_key(), ctx=ctx)
    assert published.flow() == ["running", "warc", "completed failure"]
    assert [e["code"] for e in published.statuses[-1]["errors"]] == [codes.REMOTE_ERROR]
    assert len(server.requests) == 3 + 3  # first harvest: 2 failures + 1; second: 1 + 2 retries


def test_connection_refused_is_a_remote_error(config, data_root):
    with FakeServer() as gone:
        url = gone.url + "/pages"
    ctx, published = context(dataclasses.replace(config, http_retries=1, http_backoff=0.05))
    run_harvest(start_message(url), routing_key=routing_key(), ctx=ctx)
    assert published.flow() == ["running", "completed failure"]
    error = published.statuses[-1]["errors"][0]
    assert error["code"] == codes.REMOTE_ERROR and SECRET not in error["message"]
    assert warc_files(data_root) == []


def test_response_too_large_is_refused(config, data_root, server):
    PagedApi(server, pages=1, per_page=50)
    ctx, published = context(dataclasses.replace(config, max_response_bytes=200))
    run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    assert [e["code"] for e in published.statuses[-1]["errors"]] == [codes.RESPONSE_TOO_LARGE]
    assert published.statuses[-1]["status"] == "completed failure"


def test_unknown_type_and_invalid_messages(config, server):
    ctx, published = context(config)
    message = start_message(server.url, type_="nosuch_type")
    run_harvest(message, routing_key="harvest.start.generic.nosuch_type", ctx=ctx)
    assert [e["code"] for e in published.statuses[0]["errors"]] == [codes.UNKNOWN_TYPE]
    with pytest.raises(InvalidMessage) as info:
        run_harvest({"id": "x", "type": "generic_pages"}, routing_key=routing_key(), ctx=ctx)
    assert info.value.code == codes.SCHEMA_INVALID


def test_registry_lists_and_loads_types():
    names = [t.name for t in harvester_types()]
    assert "generic_pages" in names and "generic_stream" in names
    assert lookup("generic_stream").stream and lookup("generic_stream").load().service == "Generic Harvester"
    with pytest.raises(UnknownHarvestType) as info:
        lookup("no_such")
    assert info.value.code == codes.UNKNOWN_TYPE and "generic_pages" in str(info.value)


def test_adapter_on_another_session_redacts_oauth1(config, data_root, server):
    """A client library's own Session (as twarc/flickrapi have) signing with OAuth 1.0a."""
    from requests_oauthlib import OAuth1

    from swath.harvesters.recorder import Recorder
    from swath.messages.model import HarvestStart
    from tests.enginekit import raw_bytes as warc_bytes

    api = PagedApi(server, pages=1, per_page=2)
    creds = {"consumer_key": "ck-123456789", "consumer_secret": "cs-abcdefghij",
             "access_token": "at-987654321", "access_token_secret": "ats-zyxwvuts", "api_key": SECRET}
    start = HarvestStart.from_dict(start_message(server.url + "/pages", credentials=creds))
    recorder = Recorder(start=start, config=config, directory=data_root / "coll")
    (data_root / "coll").mkdir()
    session = requests.Session()
    session.mount("http://", recorder.recording_adapter(["extra-secret-42"]))
    auth = OAuth1(creds["consumer_key"], creds["consumer_secret"], creds["access_token"], creds["access_token_secret"])
    response = session.post(server.url + "/pages", params={"api_key": SECRET},
                            data={"status": "hello", "note": "extra-secret-42"}, auth=auth)
    assert response.status_code == 200 and response.json()["items"] == [{"id": 0, "text": "item 0"},
                                                                        {"id": 1, "text": "item 1"}]
    assert server.requests[0].headers["Authorization"].startswith("OAuth ")  # really signed
    recorder.finish(final=True)
    recorder.close()
    files = warc_files(data_root)
    data = warc_bytes(files)
    signature = server.requests[0].headers["Authorization"].split('oauth_signature="')[1].split('"')[0]
    for secret in [*creds.values(), "extra-secret-42", signature]:
        assert secret.encode() not in data, secret
    request = next(r for r in read_records(files) if r[0] == "request")
    assert request[3].get_header("Authorization") == "OAuth REDACTED"
    assert request[4] == b"status=hello&note=REDACTED"
    response_record = next(r for r in read_records(files) if r[0] == "response")
    assert json.loads(response_record[4])["items"][0]["id"] == 0 and api.served == [0, 1]


def test_a_platform_that_cannot_start_fails_with_a_status(config, server, monkeypatch):
    from swath.platforms.generic.harvester import GenericHarvester

    def broken(self, *, harvest):
        raise KeyError(f"credential missing near {SECRET}")

    monkeypatch.setattr(GenericHarvester, "__init__", broken)
    ctx, published = context(config)
    run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx)
    assert published.kinds() == ["completed failure"]
    error = published.statuses[0]["errors"][0]
    assert error["code"] == codes.UNKNOWN_ERROR and "KeyError" in error["message"] and SECRET not in error["message"]
