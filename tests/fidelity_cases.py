"""The platforms under the fidelity property (tests/fidelity.py): one `Case` each, on its fake from tests/fakes/.
Fakes of "newest first" listings keep publishing while the harvest pages (`publish`)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from urllib.parse import parse_qs

from tests.fakes import bluesky, flickr, mastodon, tumblr, twitter
from tests.fakes.ckan import CKANPortal
from tests.fakes.dcat import DCATPortal
from tests.fakes.httpserver import FakeServer, Request
from tests.fakes.oai import GeneratedRepository
from tests.fakes.ods import ODSPortal
from tests.fidelity import MODES, Case
from tests.metasharekit import USERS, fixture_xml, lr_zip, node_storage, scripted_node

ALICE, ALICE_HANDLE = "did:plc:alice0000000000000000001", "alice.example.com"
SCIENCE = "at://did:plc:bob000000000000000000002/app.bsky.feed.generator/science"
GWU = "17455195"
TUMBLR_HOST = "gwulibraries.tumblr.com"
FLICKR_NSID = "131866249@N02"


def _json(req: Request) -> object:
    try:
        return json.loads(req.sent or b"")
    except ValueError:  # images, HTML error pages
        return None


def _field(req: Request, *path: str) -> list:
    doc = _json(req)
    for name in path:
        doc = doc.get(name) if isinstance(doc, dict) else None
    return doc if isinstance(doc, list) else []


def _twitter_ids(req: Request) -> list[str]:
    listing = req.path.startswith("/2/tweets/search/") or req.path.endswith("/tweets")
    return [t["id"] for t in _field(req, "data")] if listing else []


def _tumblr_ids(req: Request) -> list[str]:
    return [p["id_string"] for p in _field(req, "response", "posts")]


def _flickr_ids(req: Request) -> list[str]:
    form = {k: v[0] for k, v in parse_qs(req.body.decode()).items()} | {k: v[0] for k, v in req.query.items()}
    listing = form.get("method") == "flickr.people.getPublicPhotos"
    return [p["id"] for p in _field(req, "photos", "photo")] if listing else []


def _mastodon_ids(req: Request) -> list[str]:
    if req.path == "/api/v2/search":
        return [s["id"] for s in _field(req, "statuses")]
    doc = _json(req)
    listing = req.path.startswith("/api/v1/timelines/") or req.path.endswith("/statuses")
    return [s["id"] for s in doc] if listing and isinstance(doc, list) else []


def _entry_key(entry: dict) -> str:
    """A feed entry's item: the repost itself when it is one (the export's row id), else the post."""
    return entry["reason"]["uri"] if entry.get("reason") else entry["post"]["uri"]


def _bluesky_ids(req: Request) -> list[str]:
    return [_entry_key(e) for e in _field(req, "feed")] + [p["uri"] for p in _field(req, "posts")]


def _oai_ids(req: Request) -> list[str]:
    return re.findall(r"<identifier>([^<]+)</identifier>", (req.sent or b"").decode()) \
        if b"<ListRecords>" in (req.sent or b"") else []


def _dcat_ids(req: Request) -> list[str]:
    return [node["dct:identifier"] for node in _field(req, "@graph") if node.get("@type") == "dcat:Dataset"]


def _url(fake) -> list[dict]:
    return [{"id": "seed-1", "token": fake.server.url + getattr(fake, "path", "")}]


TWITTER = Case(
    name="twitter_search_2", harvest_type="twitter_search_2", api="twitter",
    make=lambda *_: twitter.FakeTwitter(page_size=10),
    seeds=lambda fake: [{"id": "s-posts", "token": {"query": "post"}}],
    credentials={"bearer_token": twitter.BEARER_TOKEN}, item_ids=_twitter_ids,
    listed=lambda fake: {t["id"] for t in fake.world.tweets}, publish=lambda fake: fake.publish())
TUMBLR = Case(
    name="tumblr", harvest_type="tumblr_blog_posts", api="tumblr",
    make=lambda *_: tumblr.FakeTumblr(blogs=tumblr.build_blogs(counts={TUMBLR_HOST: 90})),
    seeds=lambda fake: [{"id": "s-gwu", "uid": "gwulibraries"}], credentials={"api_key": tumblr.API_KEY},
    item_ids=_tumblr_ids, listed=lambda fake: {p["id_string"] for p in fake.blogs[TUMBLR_HOST].posts},
    publish=lambda fake: fake.publish(TUMBLR_HOST), id_column="tumblr_id")
FLICKR = Case(
    name="flickr", harvest_type="flickr_user", api="flickr",
    make=lambda *_: flickr.FakeFlickr(people=flickr.build_people(counts={"justin.littman": 34})),
    seeds=lambda fake: [{"id": "s-justin", "token": "justin.littman", "uid": FLICKR_NSID}],
    credentials={"key": flickr.API_KEY, "secret": flickr.API_SECRET}, item_ids=_flickr_ids,
    listed=lambda fake: {p["id"] for p in fake.people[FLICKR_NSID].photos},
    publish=lambda fake: fake.publish(FLICKR_NSID), id_column="photo_id")
MASTODON = Case(
    name="mastodon_hashtag", harvest_type="mastodon_hashtag", api="mastodon",
    make=lambda *_: mastodon.FakeMastodon(statuses_per_tag=130),
    seeds=lambda fake: [{"id": "s-lib", "token": "#libraries"}], item_ids=_mastodon_ids,
    listed=lambda fake: {s["id"] for s in fake.tagged("libraries")}, publish=lambda fake: fake.post("libraries"))
# twarc waits a second between full-archive pages (its rate limit): one resumed run over three pages, no publishing
TWITTER_ARCHIVE = dataclasses.replace(TWITTER, name="twitter_academic_search", harvest_type="twitter_academic_search",
                                      make=lambda *_: twitter.FakeTwitter(page_size=20), publish=None,
                                      modes=("resumed",))
TWITTER_TIMELINE = Case(
    name="twitter_user_timeline_2", harvest_type="twitter_user_timeline_2", api="twitter",
    make=lambda *_: twitter.FakeTwitter(page_size=5), seeds=lambda fake: [{"id": "s-gwu", "token": "gwu"}],
    credentials={"bearer_token": twitter.BEARER_TOKEN}, item_ids=_twitter_ids,
    listed=lambda fake: {t["id"] for t in fake.world.tweets if t["author_id"] == GWU},
    publish=lambda fake: fake.publish())
MASTODON_ACCOUNT = Case(
    name="mastodon_account", harvest_type="mastodon_account", api="mastodon",
    make=lambda *_: mastodon.FakeMastodon(statuses_per_tag=130),
    seeds=lambda fake: [{"id": "s-alice", "token": "@alice"}], item_ids=_mastodon_ids,
    listed=lambda fake: {s["id"] for s in list(fake.statuses) if s["account"]["username"] == "alice"},
    publish=lambda fake: fake.post("archives", author="alice"))
MASTODON_PUBLIC = Case(
    name="mastodon_public", harvest_type="mastodon_public", api="mastodon",
    make=lambda *_: mastodon.FakeMastodon(statuses_per_tag=100), seeds=lambda fake: [], item_ids=_mastodon_ids,
    listed=lambda fake: {s["id"] for s in list(fake.statuses) if s["reblog"] is None},
    publish=lambda fake: fake.post("archives"), interrupt_after=3)
MASTODON_SEARCH = Case(
    name="mastodon_search", harvest_type="mastodon_search", api="mastodon",
    make=lambda *_: mastodon.FakeMastodon(statuses_per_tag=150), seeds=lambda fake: [{"id": "s-q", "token": "archive"}],
    credentials={"access_token": mastodon.TOKEN}, item_ids=_mastodon_ids,
    listed=lambda fake: {s["id"] for s in list(fake.statuses) if s["reblog"] is None and "archive" in s["content"]},
    publish=lambda fake: fake.post("archives"))
BLUESKY_AUTHOR = Case(
    name="bluesky_author_feed", harvest_type="bluesky_author_feed", api="bluesky",
    # alice logs in with her handle, which is in every answer: the archive must keep it (issue 29 item 1)
    make=lambda *_: bluesky.FakeBluesky(require_auth=True, identifier=ALICE_HANDLE),
    seeds=lambda fake: [{"id": "s-alice", "token": ALICE_HANDLE}],
    logins={"identifier": ALICE_HANDLE}, credentials={"app_password": bluesky.APP_PASSWORD},
    learnt=lambda fake: list(fake.issued), item_ids=_bluesky_ids,
    unrecorded=("/xrpc/com.atproto.server.createSession", "/xrpc/com.atproto.server.refreshSession"),
    listed=lambda fake: {_entry_key(e) for e in fake.author_entries(ALICE)},
    publish=lambda fake: fake.add_posts(1, did=ALICE))
BLUESKY_SEARCH = Case(
    name="bluesky_search", harvest_type="bluesky_search", api="bluesky",
    make=lambda *_: bluesky.FakeBluesky(require_auth=True),
    seeds=lambda fake: [{"id": "s-archive", "token": "archive"}], logins={"identifier": bluesky.IDENTIFIER},
    credentials={"app_password": bluesky.APP_PASSWORD},
    learnt=lambda fake: list(fake.issued), item_ids=_bluesky_ids, unrecorded=BLUESKY_AUTHOR.unrecorded,
    listed=lambda fake: {p["uri"] for p in fake.search_hits("archive")},
    publish=lambda fake: fake.add_posts(1, did=ALICE))
BLUESKY_FEED = Case(
    name="bluesky_feed", harvest_type="bluesky_feed", api="bluesky",
    make=lambda *_: bluesky.FakeBluesky(require_auth=True, page_size=20),
    seeds=lambda fake: [{"id": "s-science", "token": SCIENCE}], logins={"identifier": bluesky.IDENTIFIER},
    credentials={"app_password": bluesky.APP_PASSWORD}, learnt=lambda fake: list(fake.issued),
    item_ids=_bluesky_ids, unrecorded=BLUESKY_AUTHOR.unrecorded, listed=lambda fake: set(fake.world.feeds[SCIENCE]))
OAI = Case(
    name="oai_pmh", harvest_type="oai_pmh", make=lambda *_: GeneratedRepository(count=120, per_page=15),
    seeds=lambda fake: [{"id": "seed-1", "token": fake.server.url + "/oai"}], item_ids=_oai_ids,
    listed=lambda fake: {fake.identifier(n) for n in range(1, fake.count + 1)}, interrupt_after=4)
CKAN = Case(
    name="ckan", harvest_type="ckan", make=lambda *_: CKANPortal(count=150, max_rows=25), seeds=_url,
    item_ids=lambda req: [p["id"] for p in _field(req, "result", "results")],
    listed=lambda fake: {p["id"] for p in fake.packages}, options={"rows": 25}, interrupt_after=3)
DCAT = Case(
    name="dcat", harvest_type="dcat", make=lambda *_: DCATPortal(syntax="jsonld", count=60, per_page=8),
    seeds=_url, item_ids=_dcat_ids, listed=lambda fake: {d.identifier for d in fake.spec.datasets},
    interrupt_after=3, modes=MODES[:2])
ODS = Case(
    name="opendatasoft", harvest_type="opendatasoft", make=lambda *_: ODSPortal(count=450), seeds=_url,
    item_ids=lambda req: [d["dataset_id"] for d in _field(req, "results")],
    listed=lambda fake: {d["dataset_id"] for d in fake.datasets}, modes=MODES[:2])

def _metashare_node(fixtures_dir: Path, tmp_path: Path) -> FakeServer:
    storage = node_storage(tmp_path / "node", fixture_xml(fixtures_dir))
    served = {identifier: lr_zip(storage, identifier) for identifier in storage.ids()}
    return scripted_node({i: checksum for i, (checksum, _) in served.items()}, {i: z for i, (_, z) in served.items()})


METASHARE = Case(
    name="metashare_sync", harvest_type="metashare_sync", make=_metashare_node, seeds=lambda node: [
        {"id": "node-1", "token": node.url}], logins={"username": "harvester"},
    credentials={"password": USERS["harvester"]}, unrecorded=("/login/",),
    item_ids=lambda req: [req.path.split("/")[2]] if req.path.endswith("/metadata/") and req.sent else [],
    listed=lambda node: {path.split("/")[2] for path in node.routes if str(path).endswith("/metadata/")},
    modes=MODES[:2])

CASES = [TWITTER, TWITTER_ARCHIVE, TWITTER_TIMELINE, TUMBLR, FLICKR, MASTODON, MASTODON_ACCOUNT, MASTODON_PUBLIC,
         MASTODON_SEARCH, BLUESKY_AUTHOR, BLUESKY_SEARCH, BLUESKY_FEED, OAI, CKAN, DCAT, ODS, METASHARE]
