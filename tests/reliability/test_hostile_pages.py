"""Hostile paging through the real harvesters, against fake servers on 127.0.0.1.

Listings that would never end (a Twitter next_token that repeats, a Tumblr total_posts of 10^12, a
generic `next` back to itself or to an earlier page, a Flickr `pages` of 10^12) and a server that hands
the api_key back in its `next` links. Each harvest must end within a deadline with exactly one final
status and a stable code, keep and count what was served before the fault in a complete WARC, and keep
the key out of its state and journal. Hostile values (odd ids, deep JSON): test_hostile_values.py.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
import urllib.parse
from pathlib import Path

import pytest

from swath.core.jobs import JobInterrupted
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.messages.model import COMPLETED_FAILURE
from tests.enginekit import context, wait_for
from tests.fakes.flickr import API_KEY as FLICKR_KEY
from tests.fakes.flickr import API_SECRET as FLICKR_SECRET
from tests.fakes.flickr import FakeFlickr
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.fakes.social import Outcome, run_harvest_job, start_body
from tests.fakes.tumblr import API_KEY as TUMBLR_KEY
from tests.fakes.tumblr import FakeTumblr, build_blogs
from tests.fakes.twitter import BEARER_TOKEN, FakeTwitter, matches
from tests.reliability.kit import (
    FINAL,
    GENERIC_SECRET,
    everything_written,
    leaks,
    warc_responses,
)

pytestmark = pytest.mark.reliability

DEADLINE = 120.0  # seconds a harvest may take here; each should end in a few
PER_PAGE = 4


def secret_forms(secret: str) -> list[str]:
    return [secret, urllib.parse.quote(secret, safe=""), base64.b64encode(secret.encode()).decode()]


def state_files(collection: Path) -> list[tuple[Path, bytes]]:
    """The collection's state (swath-state.json, with the resume journal) and `.swath/` records: all
    but the WARCs, whose response bodies hold what the server sent (see docs/security.md)."""
    return [(p, data) for p, data in everything_written(collection) if ".warc" not in p.name]


def run_within(config, body: dict) -> Outcome:
    """The harvester's job for `body`, which must end within DEADLINE (an endless listing fails here)."""
    done: list[Outcome] = []
    thread = threading.Thread(target=lambda: done.append(run_harvest_job(config, body)), daemon=True)
    thread.start()
    thread.join(DEADLINE)
    assert not thread.is_alive(), f"harvest {body['id']} still running after {DEADLINE:g} s"
    assert done, f"harvest {body['id']} raised instead of ending with a status"
    return done[0]


def assert_one_clean_end(out: Outcome, collection: Path) -> list[tuple[str, bytes]]:
    """Exactly one final status, no `.open` WARC, every WARC reported; returns the WARCs' 200 responses."""
    finals = [b for k, b in out.sent if k.startswith("harvest.status.") and b["status"] in FINAL]
    assert len(finals) == 1, [b["status"] for b in finals]
    assert not list(collection.rglob("*.open"))
    on_disk = sorted(str(p) for p in collection.rglob("*.warc.gz"))
    assert sorted(w["path"] for w in out.warcs) == on_disk and on_disk
    return warc_responses(Path(p) for p in on_disk)


# ---- endless listings ------------------------------------------------------------------------------


class RepeatingTwitter(FakeTwitter):
    """Search for `loop`: the first page's next_token comes back on every page after it."""

    with_data = True

    def search(self, req: Request) -> Response:
        if req.arg("query") != "loop":
            return super().search(req)
        tweets = self.world.tweets
        if req.arg("next_token") is None:
            page = tweets[:PER_PAGE]
        else:
            page = tweets[PER_PAGE:2 * PER_PAGE] if self.with_data else []
        meta = {"result_count": len(page), "next_token": "same-token"}
        return self._json({"data": page, "meta": meta} if page else {"meta": meta})


@pytest.mark.parametrize("with_data", [True, False], ids=["pages-with-tweets", "pages-without-data"])
def test_a_repeated_twitter_next_token_ends_that_seed(config, with_data):
    with RepeatingTwitter() as fake:
        fake.with_data = with_data
        cfg = config.with_api_url("twitter", fake.url)
        seeds = [{"id": "seed-loop", "token": "loop"}, {"id": "seed-ok", "token": "gwu"}]
        out = run_within(cfg, start_body("twitter_search_2", seeds, credentials={"bearer_token": BEARER_TOKEN}))
        looped = [r for r in fake.server.requests_to("/2/tweets/search/recent") if r.arg("query") == "loop"]
    responses = assert_one_clean_end(out, cfg.data_root / "collections/cs1/c1")
    assert [r.arg("next_token") for r in looped] == [None, "same-token"]  # the repeat is never requested
    served = [t["id"] for t in fake.world.tweets[:PER_PAGE * (2 if with_data else 1)]]
    others = [t for t in fake.world.tweets if matches("gwu", t)]
    assert out.status["status"] == COMPLETED_FAILURE
    assert out.codes("errors") == [(codes.PAGINATION_LOOP, "seed-loop")]
    assert out.count("tweets") == len(served) + len(others)  # each served tweet counted once
    stored = [t["id"] for uri, body in responses if "query=loop" in uri for t in json.loads(body).get("data", [])]
    assert stored == served


class EndlessTumblr(FakeTumblr):
    """endless.example.org: the same posts at every offset, against a total_posts of 10^12."""

    def posts(self, req: Request) -> Response:
        if "/endless.example.org/" not in req.path:
            return super().posts(req)
        blog = self.blogs["endless.example.org"]
        return self._envelope(200, "OK", {"posts": blog.posts, "total_posts": 10**12}, None)


def test_a_tumblr_total_posts_of_a_trillion_ends_when_posts_repeat(config):
    blogs = build_blogs(counts={"endless.example.org": 20, "archive.example.org": 9})
    with EndlessTumblr(blogs=blogs) as fake:
        cfg = config.with_api_url("tumblr", fake.url)
        seeds = [{"id": "seed-endless", "uid": "endless.example.org"}, {"id": "seed-ok", "uid": "archive.example.org"}]
        out = run_within(cfg, start_body("tumblr_blog_posts", seeds, credentials={"api_key": TUMBLR_KEY}))
        endless = fake.server.requests_to("/v2/blog/endless.example.org/posts")
    responses = assert_one_clean_end(out, cfg.data_root / "collections/cs1/c1")
    posts = fake.expected_posts("endless.example.org")
    assert [int(r.arg("offset")) for r in endless] == [0, len(posts)]  # the second page repeats the first
    assert out.codes("errors") == [(codes.PAGINATION_LOOP, "seed-endless")]
    assert out.count("posts") == len(posts) + len(fake.expected_posts("archive.example.org"))
    stored = [p["id"] for uri, body in responses if "endless" in uri for p in json.loads(body)["response"]["posts"]]
    assert stored == [p["id"] for p in posts] * 2  # both pages kept, as they came


def cycle_api(server: FakeServer, *, pages: int, back_to: int) -> None:
    """/cycle?page=N: PER_PAGE items; page N links to N+1, the last page back to page `back_to`. Every
    link is absolute and carries the api_key, as a server that echoes its query string does."""

    @server.route("/cycle")
    def page(req: Request) -> Response:
        if req.arg("api_key") != GENERIC_SECRET:
            return Response(401, b'{"error": "bad key"}')
        n = int(req.arg("page", "1"))
        following = n + 1 if n < pages else back_to
        items = [{"id": (n - 1) * PER_PAGE + i} for i in range(PER_PAGE)]
        link = f"{server.url}/cycle?api_key={GENERIC_SECRET}&page={following}"
        return Response(200, json.dumps({"items": items, "next": link}).encode())


@pytest.mark.parametrize("pages,back_to", [(1, 1), (3, 1), (4, 2)], ids=["to-itself", "to-the-first", "to-page-2"])
def test_a_generic_next_link_that_cycles_ends_that_seed(config, pages, back_to):
    with FakeServer() as server:
        cycle_api(server, pages=pages, back_to=back_to)
        body = start_body("generic_pages", [{"id": "seed-1", "token": f"{server.url}/cycle?page=1"}],
                          credentials={"api_key": GENERIC_SECRET})
        out = run_within(config, body)
        requested = [int(r.arg("page")) for r in server.requests_to("/cycle")]
        api_keys = [r.query["api_key"] for r in server.requests_to("/cycle")]
    collection = config.data_root / "collections/cs1/c1"
    responses = assert_one_clean_end(out, collection)
    assert requested == list(range(1, pages + 1))  # every page once; the link back is never followed
    assert api_keys == [[GENERIC_SECRET]] * pages  # re-added once, not doubled from the echoed link
    assert out.codes("errors") == [(codes.PAGINATION_LOOP, "seed-1")]
    assert out.count("items") == pages * PER_PAGE
    assert [i["id"] for _, b in responses for i in json.loads(b)["items"]] == list(range(pages * PER_PAGE))
    assert not leaks(secret_forms(GENERIC_SECRET), state_files(collection))


class EndlessFlickr(FakeFlickr):
    """getPublicPhotos: the first page's photos on every page, against `pages` of 10^12."""

    def public_photos(self, params: dict) -> Response:
        answer = json.loads(super().public_photos({**params, "page": "1"}).body)
        answer["photos"]["pages"] = 10**12
        return Response(200, json.dumps(answer).encode())


def test_a_flickr_pages_of_a_trillion_ends_when_photos_repeat(config):
    with EndlessFlickr() as fake:
        cfg = config.with_api_url("flickr", fake.url)
        person = fake.person("library_of_congress")
        seeds = [{"id": "seed-1", "token": person.username, "uid": person.nsid}]
        out = run_within(cfg, start_body("flickr_user", seeds, credentials={"key": FLICKR_KEY,
                                                                             "secret": FLICKR_SECRET}))
        listed = fake.method_calls("flickr.people.getPublicPhotos")
    assert_one_clean_end(out, cfg.data_root / "collections/cs1/c1")
    assert listed == 2
    assert out.codes("errors") == [(codes.PAGINATION_LOOP, "seed-1")]
    assert out.count("photos") == len(person.photos)  # the first page's photos, each once


# ---- the api_key a server hands back: not in the journal, interrupted or finished ------------------


def test_a_next_link_carrying_the_api_key_keeps_it_out_of_state_and_journal(config):
    pages = 12
    config = dataclasses.replace(config, warc_max_bytes=1500, http_retries=1, http_backoff=0.01)
    ctx, _published = context(config)
    gate = threading.Event()  # set: the pages past the middle fail once the worker is shutting down
    gate.set()
    with FakeServer() as server:
        cycle_api(server, pages=pages, back_to=0)  # page 0 does not exist: the last link ends the listing
        served = server.routes["/cycle"]

        def gated(req: Request) -> Response:
            page = int(req.arg("page", "1"))
            if page == 0:
                return Response(200, b'{"items": [], "next": null}')
            if page > pages // 2 and gate.is_set():
                ctx.shutdown.wait(DEADLINE)
                return Response(503, b'{"error": "going down"}')
            return served(req)

        server.route("/cycle")(gated)
        body = start_body("generic_pages", [{"id": "seed-1", "token": f"{server.url}/cycle?page=1"}],
                          credentials={"api_key": GENERIC_SECRET})
        collection = config.data_root / body["path"]
        errors: list[BaseException] = []

        def run() -> None:
            try:
                run_harvest(body, routing_key=f"harvest.start.generic.{body['type']}", ctx=ctx)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        wait_for(lambda: len(server.requests_to("/cycle")) > pages // 2, what="the gated page requested")
        ctx.shutdown.set()
        ctx.stop.set()
        thread.join(DEADLINE)
        assert not thread.is_alive() and len(errors) == 1 and isinstance(errors[0], JobInterrupted), errors
        journal = b"".join(data for _, data in state_files(collection))
        assert f"/cycle?page={pages // 2 + 1}".encode() in journal  # the interrupted run's cursor, keyless
        assert not leaks(secret_forms(GENERIC_SECRET), state_files(collection))

        gate.clear()
        out = run_within(config, body)  # the start delivered again resumes and finishes
    assert_one_clean_end(out, collection)
    assert out.status["status"] == "completed success", out.status["errors"]
    assert out.count("items") == pages * PER_PAGE
    assert not leaks(secret_forms(GENERIC_SECRET), state_files(collection))
