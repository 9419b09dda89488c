"""Flickr harvests: the real flickrapi code path, through the engine, against a fake Flickr on 127.0.0.1."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from swath.messages import codes
from tests.fakes.flickr import API_KEY, API_SECRET, FakeFlickr, build_people
from tests.fakes.social import run_harvest_job, start_body

CREDS = {"key": API_KEY, "secret": API_SECRET}
# the spec's flickr_user example: one seed with token and uid, one with a token only
SPEC_SEEDS = [
    {"id": "a36fe186fbfa47a89dbb0551e1f0f181", "token": "justin.littman", "uid": "131866249@N02"},
    {"id": "ab0a4d9369324901a890ec85f00194ac", "token": "library_of_congress"},
]


@pytest.fixture
def fake():
    with FakeFlickr() as server:
        yield server


@pytest.fixture
def cfg(config, fake):
    return config.with_api_url("flickr", fake.url)


def test_spec_example_pages_photos_fetches_sizes_and_reports_the_uid(cfg, fake):
    sizes = ["Thumbnail", "Large", "Original"]
    out = run_harvest_job(cfg, start_body("flickr_user", SPEC_SEEDS, credentials=CREDS, options={"sizes": sizes}))

    assert out.status["status"] == "completed success", out.status
    people = [fake.person("justin.littman"), fake.person("library_of_congress")]
    photos = [p for person in people for p in person.photos]
    assert out.count("photos") == len(photos)
    assert out.status["uids"] == {SPEC_SEEDS[1]["id"]: fake.person("library_of_congress").nsid}
    assert out.status["token_updates"] == {}
    # paged with page/pages: one getPublicPhotos call per page of each user
    pages = sum(-(-len(p.photos) // fake.per_page_cap) for p in people)
    assert fake.method_calls("flickr.people.getPublicPhotos") == pages
    assert fake.method_calls("flickr.photos.getInfo") == len(photos)
    # every API body and every image file is in the WARC, byte for byte
    stored = Counter(body for _, status, body in out.records() if status == 200)
    assert stored == Counter(fake.bodies())
    suffixes = {"Thumbnail": "_t", "Large": "_b", "Original": "_o"}
    image_uris = sorted(uri for uri, _, _ in out.records() if uri.endswith(".jpg"))
    assert image_uris == sorted(fake.url + fake.image_path(p, s[1:]) for p in photos for s in suffixes.values())
    raw = out.raw_warc_bytes()
    assert API_KEY.encode() not in raw and API_SECRET.encode() not in raw


def test_renamed_user_is_a_token_update(cfg, fake):
    seed = {"id": "seed-1", "token": "old.name", "uid": fake.person("justin.littman").nsid}
    out = run_harvest_job(cfg, start_body("flickr_user", [seed], credentials=CREDS))

    assert out.status["token_updates"] == {"seed-1": "justin.littman"}
    assert out.count("photos") == len(fake.person("justin.littman").photos)
    assert fake.method_calls("flickr.photos.getSizes") == 0  # no sizes asked for


def test_unknown_username_is_token_not_found(cfg, fake):
    seeds = [{"id": "seed-x", "token": "nobody.at.all"}, SPEC_SEEDS[1]]
    out = run_harvest_job(cfg, start_body("flickr_user", seeds, credentials=CREDS))

    assert out.status["status"] == "completed success"
    assert out.codes("warnings") == [(codes.TOKEN_NOT_FOUND, "seed-x")]
    assert out.count("photos") == len(fake.person("library_of_congress").photos)


def test_incremental_stops_at_the_last_photo_harvested(cfg, fake):
    body = start_body("flickr_user", SPEC_SEEDS[:1], credentials=CREDS, options={"incremental": True})
    person = fake.person("justin.littman")
    first = run_harvest_job(cfg, body)
    assert first.count("photos") == len(person.photos)

    newer = build_people(counts={"justin.littman": 4}, seed=77)[person.nsid].photos
    for i, photo in enumerate(newer):  # four photos uploaded since, with higher ids
        photo["id"] = str(int(person.photos[0]["id"]) + 100 * (len(newer) - i))
    person.photos[:0] = newer
    fake.server.requests.clear()
    second = run_harvest_job(cfg, {**body, "id": body["id"] + "-2"})

    assert second.count("photos") == len(newer)
    assert fake.method_calls("flickr.photos.getInfo") == len(newer)


def test_an_image_that_fails_is_a_warning_and_the_harvest_goes_on(cfg, fake):
    person = fake.person("library_of_congress")
    lost = person.photos[1]
    del fake.server.routes[fake.image_path(lost, "t")]
    out = run_harvest_job(cfg, start_body("flickr_user", SPEC_SEEDS[1:], credentials=CREDS,
                                          options={"sizes": ["Thumbnail"]}))

    assert out.status["status"] == "completed success"
    assert out.codes("warnings") == [(codes.ITEM_FAILED, SPEC_SEEDS[1]["id"])]
    assert lost["id"] in out.status["warnings"][0]["message"]
    assert out.count("photos") == len(person.photos)


def test_wrong_key_is_completed_failure(cfg, fake):
    creds = {"key": "0000feedface0000", "secret": API_SECRET}
    out = run_harvest_job(cfg, start_body("flickr_user", SPEC_SEEDS, credentials=creds))

    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.UNAUTHORIZED, None)]
    assert "0000feedface0000" not in json.dumps(out.sent)


def test_http_401_is_completed_failure(cfg, fake):
    fake.faults.unauthorized = True
    out = run_harvest_job(cfg, start_body("flickr_user", SPEC_SEEDS, credentials=CREDS))

    assert out.status["status"] == "completed failure"
    assert out.codes("errors") == [(codes.UNAUTHORIZED, None)]
    assert out.count("photos") == 0


def test_rate_limit_and_server_errors_are_waited_out(cfg, fake):
    fake.faults.rate_limited, fake.faults.server_errors = 1, 2
    out = run_harvest_job(cfg, start_body("flickr_user", SPEC_SEEDS[1:], credentials=CREDS))

    assert [s for s, _ in fake.faults.served] == [429, 503, 503]
    assert out.status["status"] == "completed success"
    assert out.count("photos") == len(fake.person("library_of_congress").photos)
    assert codes.RATE_LIMITED in [c for c, _ in out.codes("infos")]
