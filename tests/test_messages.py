"""Schemas, routing keys and message dataclasses: the docs' examples validate, bad messages fail readably."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from swath.messages import routing
from swath.messages.model import (
    COMPLETED_FAILURE,
    ExportStart,
    HarvestStart,
    HarvestStatus,
    Note,
    Origin,
    Seed,
    WarcCreated,
    decode_body,
)
from swath.messages.validation import SCHEMA_NAMES, InvalidMessage, validate

DOCS = Path(__file__).resolve().parents[1] / "docs" / "messages.md"
EXAMPLE = re.compile(r"<!-- schema: (\w+) -->\s*```json\n(.*?)```", re.S)


def doc_examples() -> list[tuple[str, dict]]:
    return [(name, json.loads(text)) for name, text in EXAMPLE.findall(DOCS.read_text())]


def test_docs_have_an_example_of_every_message():
    assert {name for name, _ in doc_examples()} == set(SCHEMA_NAMES)


@pytest.mark.parametrize("name, body", doc_examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_docs_example_validates(name, body):
    validate(name, body)


VALID_STATUS = doc_examples()[[n for n, _ in doc_examples()].index("harvest_status")][1]
VALID_EXPORT = next(b for n, b in doc_examples() if n == "export_start")
VALID_START = next(b for n, b in doc_examples() if n == "harvest_start")


def changed(body: dict, **changes) -> dict:
    out = copy.deepcopy(body)
    for key, value in changes.items():
        if value is ...:
            out.pop(key, None)
        else:
            out[key] = value
    return out


INVALID = [
    ("harvest_status", changed(VALID_STATUS, status="done"), "status: 'done' is not one of"),
    ("harvest_status", changed(VALID_STATUS, stats=...), "'stats' is a required property"),
    ("harvest_status", changed(VALID_STATUS, stats={"yesterday": {"photos": 1}}), "stats"),
    ("harvest_status", changed(VALID_STATUS, stats={"2016-05-20": {"photos": "12"}}), "stats/2016-05-20/photos"),
    ("harvest_status", changed(VALID_STATUS, warnings=[{"code": "x"}]), "'message' is a required property"),
    ("harvest_status", changed(VALID_STATUS, warnings=["just a string"]), "warnings/0"),
    ("harvest_status", changed(VALID_STATUS, warcs={"count": 1}), "'bytes' is a required property"),
    ("harvest_status", changed(VALID_STATUS, id=...), "'id' is a required property"),
    ("harvest_start", changed(VALID_START, id=...), "'id' is a required property"),
    ("harvest_start", changed(VALID_START, seeds={"id": "x"}), "seeds"),
    ("harvest_start", changed(VALID_START, seeds=[{"token": "x"}]), "seeds/0"),
    ("harvest_start", changed(VALID_START, path=7), "path: 7 is not of type 'string'"),
    ("export_start", changed(VALID_EXPORT, seeds=[{"id": "s", "uid": "u"}]), "exactly one of 'seeds' or 'collection'"),
    ("export_start", changed(VALID_EXPORT, collection=...), "exactly one of 'seeds' or 'collection'"),
    ("export_start", changed(VALID_EXPORT, dedupe="yes"), "dedupe: 'yes' is not of type 'boolean'"),
    ("export_start", changed(VALID_EXPORT, segment_size=0), "segment_size"),
    ("export_start", changed(VALID_EXPORT, item_date_start="last tuesday"), "item_date_start"),
    ("harvest_stop", {}, "'id' is a required property"),
    ("warc_created", {"warc": {"path": "x"}}, "required property"),
]


@pytest.mark.parametrize("name, body, expected", INVALID, ids=[f"{n}-{e[:30]}" for n, _, e in INVALID])
def test_invalid_messages_fail_with_a_readable_error(name, body, expected):
    with pytest.raises(InvalidMessage) as info:
        validate(name, body)
    assert info.value.code == "schema_invalid"
    assert expected in str(info.value)
    assert str(info.value).startswith(f"{name} message is invalid")


def test_extra_fields_are_allowed_everywhere():
    for name, body in doc_examples():
        validate(name, {**body, "x_extension": {"anything": [1, 2]}})


def test_not_json_has_its_own_code():
    with pytest.raises(InvalidMessage) as info:
        decode_body(b"\xff{")
    assert info.value.code == "not_json"


@pytest.mark.parametrize("start, status", [
    ("harvest.start.flickr.flickr_user", "harvest.status.flickr.flickr_user"),
    ("export.start.twitter.twitter_search_2", "export.status.twitter.twitter_search_2"),
    ("harvest.stop.twitter.twitter_filter_stream", "harvest.status.twitter.twitter_filter_stream"),
])
def test_status_key_is_derived_from_the_start_key(start, status):
    assert routing.status_key_for(start) == status
    assert str(routing.parse(start)) == start


@pytest.mark.parametrize("bad", ["harvest.begin.x.y", "harvest.start.x", "warc.created", "harvest.start.x.y.z",
                                 "harvest.start.x y.z"])
def test_bad_routing_keys_are_refused(bad):
    with pytest.raises(routing.BadRoutingKey):
        routing.parse(bad)


def test_harvest_start_parses_and_keeps_credentials_out_of_repr():
    start = HarvestStart.from_dict(VALID_START)
    assert [s.id for s in start.seeds] == [s["id"] for s in VALID_START["seeds"]]
    assert start.collection_id == VALID_START["collection"]["id"]
    for secret in VALID_START["credentials"].values():
        assert secret not in repr(start)


def test_export_start_dates_are_timezone_aware():
    export = ExportStart.from_dict(VALID_EXPORT)
    assert export.item_date_start is not None and export.item_date_start.tzinfo is not None
    assert export.collection_id == VALID_EXPORT["collection"]["id"]


def test_builders_produce_valid_messages():
    origin = Origin(service="Test Harvester", host="h")
    status = HarvestStatus(id="x", status=COMPLETED_FAILURE, origin=origin, date_started="2026-01-01T00:00:00",
                           errors=[Note("unauthorized", "refused", seed_id="s1")], stats={})
    body = status.to_dict()
    assert body["errors"] == [{"code": "unauthorized", "message": "refused", "seed_id": "s1"}]
    assert body["warcs"] == {"count": 0, "bytes": 0}
    created = WarcCreated(path="/d/a.warc.gz", sha1="0" * 40, bytes=10, warc_id="w", date_created="2026-01-01T00:00:00",
                          collection_set_id="cs", collection_id="c", harvest_id="h", harvest_type="t")
    assert WarcCreated.from_dict(created.to_dict()) == created
    assert set(created.to_dict()) == {"warc", "collection_set", "collection", "harvest"}  # SFM's shape


def test_warc_created_carries_swaths_optional_seeds_and_record_dates():
    created = WarcCreated(path="/d/a.warc.gz", sha1="0" * 40, bytes=10, warc_id="w", date_created="2026-01-01T00:00:00",
                          collection_set_id="cs", collection_id="c", harvest_id="h", harvest_type="t",
                          seeds=[Seed("s1", "tok", "u1"), Seed("s2")], date_first="2026-01-01T00:00:01+00:00",
                          date_last="2026-01-01T00:09:00+00:00")
    body = created.to_dict()
    assert body["seeds"] == [{"id": "s1", "uid": "u1"}, {"id": "s2"}]  # never a token
    assert (body["warc"]["date_first"], body["warc"]["date_last"]) == (created.date_first, created.date_last)
    back = WarcCreated.from_dict(body)
    assert [(s.id, s.uid) for s in back.seeds or []] == [("s1", "u1"), ("s2", None)]
    with pytest.raises(InvalidMessage):
        validate("warc_created", {**body, "seeds": [{"uid": "u1"}]})  # a seed names its id


@pytest.mark.parametrize("credentials",
                         [{"api_key": ["s3cret-value"]}, "s3cret-value", {"k": {"nested": "s3cret-value"}}])
def test_schema_errors_never_quote_credentials(credentials):
    body = changed(VALID_START, credentials=credentials)
    with pytest.raises(InvalidMessage) as info:
        validate("harvest_start", body)
    assert "s3cret-value" not in str(info.value)
    assert "credentials" in str(info.value)


@pytest.mark.parametrize("date", ["0000-00-00T00:00", "2026-02-30T00:00:00", "2026-13-01T00:00:00"])
def test_impossible_dates_are_schema_invalid(date):
    with pytest.raises(InvalidMessage) as info:
        ExportStart.from_dict(changed(VALID_EXPORT, item_date_start=date))
    assert info.value.code == "schema_invalid" and "item_date_start" in str(info.value)


def test_non_ascii_digits_are_not_dates():
    with pytest.raises(InvalidMessage):
        validate("export_start", changed(VALID_EXPORT, item_date_start="\u0662\u0660\u0662\u0664-01-01T00:00Z"))


def test_every_routing_key_kind_names_its_schema():
    # validate_for_key relies on it
    assert set(routing.KINDS) | {routing.WARC_CREATED} == set(SCHEMA_NAMES)
