"""An sfm-ui site for `swath sfm import`'s tests: sfm-ui's tables (the tables and columns of its models,
github.com/gwu-libraries/sfm-ui sfm/ui/models.py) in a PostgreSQL database made and dropped by the test, seeded
with SITE and, when asked, its WARCs as files in a harvest volume; what the site holds counted from SITE, and the
import run as the CLI runs it. No tests here."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from swath.harvesters.registry import harvester_types
from swath.store import Store
from tests.requesterkit import fresh_database
from tests.test_cli import swath

# sfm-ui's tables as Django makes them (app `ui`: ui_<model>, a serial id, foreign keys as <field>_id), with the
# columns its models declare; the migrations' indexes and history tables are left out, nothing here reads them
SCHEMA = """
CREATE TABLE auth_group (id serial PRIMARY KEY, name varchar(150) UNIQUE NOT NULL);
CREATE TABLE ui_user (id serial PRIMARY KEY, username varchar(150) UNIQUE NOT NULL, password varchar(128) NOT NULL,
  email varchar(254) NOT NULL DEFAULT '', local_id varchar(255) NOT NULL DEFAULT '',
  email_frequency varchar(10) NOT NULL DEFAULT 'daily', harvest_notifications boolean NOT NULL DEFAULT true);
CREATE TABLE ui_credential (id serial PRIMARY KEY, credential_id varchar(32) UNIQUE NOT NULL,
  name varchar(255) NOT NULL, user_id integer NOT NULL REFERENCES ui_user(id), platform varchar(255) NOT NULL,
  token text UNIQUE NOT NULL,
  is_active boolean NOT NULL, date_added timestamptz NOT NULL, date_updated timestamptz NOT NULL,
  history_note text NOT NULL DEFAULT '');
CREATE TABLE ui_collectionset (id serial PRIMARY KEY, collection_set_id varchar(32) UNIQUE NOT NULL,
  group_id integer NOT NULL REFERENCES auth_group(id), name varchar(255) NOT NULL, description text NOT NULL,
  is_visible boolean NOT NULL, date_added timestamptz NOT NULL, date_updated timestamptz NOT NULL,
  history_note text NOT NULL DEFAULT '');
CREATE TABLE ui_collection (id serial PRIMARY KEY, collection_id varchar(32) UNIQUE NOT NULL,
  collection_set_id integer NOT NULL REFERENCES ui_collectionset(id),
  credential_id integer NOT NULL REFERENCES ui_credential(id), harvest_type varchar(255) NOT NULL,
  name varchar(255) NOT NULL, description text NOT NULL DEFAULT '', link varchar(512) NOT NULL DEFAULT '',
  is_on boolean NOT NULL, is_active boolean NOT NULL, visibility varchar(255) NOT NULL DEFAULT 'default',
  schedule_minutes integer, harvest_options text NOT NULL DEFAULT '', date_added timestamptz NOT NULL,
  date_updated timestamptz NOT NULL, end_date timestamptz, history_note text NOT NULL DEFAULT '');
CREATE TABLE ui_seed (id serial PRIMARY KEY, collection_id integer NOT NULL REFERENCES ui_collection(id),
  seed_id varchar(32) UNIQUE NOT NULL, token text NOT NULL, uid text NOT NULL, is_active boolean NOT NULL,
  is_valid boolean NOT NULL, date_added timestamptz NOT NULL, date_updated timestamptz NOT NULL,
  history_note text NOT NULL DEFAULT '');
CREATE TABLE ui_harvest (id serial PRIMARY KEY, harvest_type varchar(255) NOT NULL,
  harvest_id varchar(32) UNIQUE NOT NULL, collection_id integer NOT NULL REFERENCES ui_collection(id),
  status varchar(20) NOT NULL,
  date_requested timestamptz NOT NULL, date_started timestamptz, date_ended timestamptz,
  date_updated timestamptz NOT NULL, warcs_count integer NOT NULL DEFAULT 0, warcs_bytes bigint NOT NULL DEFAULT 0);
CREATE TABLE ui_harveststat (id serial PRIMARY KEY, harvest_id integer NOT NULL REFERENCES ui_harvest(id),
  harvest_date date NOT NULL, item varchar(255) NOT NULL, count integer NOT NULL CHECK (count >= 0),
  UNIQUE (harvest_id, harvest_date, item));
CREATE TABLE ui_warc (id serial PRIMARY KEY, harvest_id integer NOT NULL REFERENCES ui_harvest(id),
  warc_id varchar(32) UNIQUE NOT NULL, path text NOT NULL, sha1 varchar(42) NOT NULL, bytes integer NOT NULL,
  date_created timestamptz NOT NULL, date_added timestamptz NOT NULL, date_updated timestamptz NOT NULL);
"""

# (set name, [(harvest type, active?, [seed active? ...], [[warc bytes ...] per harvest])])
SITE = [
    ("elections", [("twitter_search_2", True, [True, True, False], [[1200, 3400], [560]]),
                   ("twitter_user_timeline", False, [True], [[90, 45]])]),
    ("museums", [("flickr_user", True, [True, True], [[77000]]),
                 ("weibo_timeline", False, [], []),
                 ("tumblr_blog_posts", True, [True], []),
                 ("instagram_user", True, [True], [[300]])]),  # a type swath does not have
    ("empty set", []),
]
# per type: sfm-ui's credential platform, its schedule (minutes; None: on demand) and harvest_options
PLATFORMS = {"twitter_search_2": "twitter2", "twitter_user_timeline": "twitter", "flickr_user": "flickr",
             "weibo_timeline": "weibo", "tumblr_blog_posts": "tumblr", "instagram_user": "tumblr"}
SCHEDULES = {"twitter_search_2": 1440, "flickr_user": 10080, "twitter_user_timeline": 60}
OPTIONS = {"twitter_search_2": '{"incremental": true}'}
# sfm-ui's credential JSON (its forms leave unused fields as empty strings)
TOKENS = {"twitter2": ["consumer_key", "consumer_secret", "access_token", "access_token_secret", "bearer_token"],
          "twitter": ["consumer_key", "consumer_secret"], "flickr": ["key", "secret"], "weibo": ["access_token"],
          "tumblr": ["api_key"]}
# the WARCs whose files do not match their rows: (bytes of the row, what is wrong with the file)
MISMATCHED, MISSING = 560, 45
STATS_DAY = "2026-01-02"  # each harvest's stats: on this day, as many tweets as its WARCs' bytes


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL database of this test's own, dropped after it (named as requesterkit's: tests/tiers.py knows it)."""
    with fresh_database("swath_sfm_test") as url:
        yield url


def new() -> str:
    return uuid.uuid4().hex  # sfm-ui's ids: uuid4 hex (models.default_uuid)


def credential_token(platform: str) -> dict[str, str]:
    names = TOKENS[platform]
    return {name: (new() if i < 4 or platform != "twitter2" else "") for i, name in enumerate(names)}


def seed_site(conn, harvest_root: Path | None = None) -> dict[str, str]:
    """The SFM site of SITE in sfm-ui's tables; with `harvest_root`, each WARC as a file there whose size and sha1
    are its row's (but MISMATCHED's content and MISSING's presence). Returns the credential values by platform."""
    conn.execute(text(SCHEMA))
    conn.execute(text("INSERT INTO auth_group (name) VALUES ('staff')"))
    conn.execute(text("INSERT INTO ui_user (username, password) VALUES ('ada', 'x')"))
    credentials, tokens = {}, {}
    for platform in TOKENS:
        tokens[platform] = json.dumps(credential_token(platform))
        credentials[platform] = conn.execute(text(
            "INSERT INTO ui_credential (credential_id, name, user_id, platform, token, is_active, date_added, "
            "date_updated) VALUES (:c, :p, 1, :p, :t, true, now(), now()) RETURNING id"),
            {"c": new(), "p": platform, "t": tokens[platform]}).scalar_one()
    for set_name, collections in SITE:
        set_id = new()
        set_pk = conn.execute(text("INSERT INTO ui_collectionset (collection_set_id, group_id, name, description, "
                                   "is_visible, date_added, date_updated) VALUES (:i, 1, :n, '', true, now(), now()) "
                                   "RETURNING id"), {"i": set_id, "n": set_name}).scalar_one()
        for harvest_type, active, seeds, harvests in collections:
            coll_id = new()
            coll_pk = conn.execute(text("INSERT INTO ui_collection (collection_id, collection_set_id, credential_id, "
                                        "harvest_type, name, is_on, is_active, schedule_minutes, harvest_options, "
                                        "date_added, date_updated) VALUES (:i, :s, :c, :t, :t, :a, :a, :m, :o, now(), "
                                        "now()) RETURNING id"),
                                   {"i": coll_id, "s": set_pk, "c": credentials[PLATFORMS[harvest_type]],
                                    "t": harvest_type, "a": active, "m": SCHEDULES.get(harvest_type),
                                    "o": OPTIONS.get(harvest_type, "")}).scalar_one()
            for n, seed_active in enumerate(seeds):  # distinct tokens: swath refuses a seed given twice
                token = f'{{"query": "gwu{n}"}}' if harvest_type == "twitter_search_2" else f"gwu{n}"
                conn.execute(text("INSERT INTO ui_seed (collection_id, seed_id, token, uid, is_active, is_valid, "
                                  "date_added, date_updated) VALUES (:c, :i, :t, '', :a, true, now(), now())"),
                             {"c": coll_pk, "i": new(), "t": token, "a": seed_active})
            for warcs in harvests:
                harvest_pk = conn.execute(text("INSERT INTO ui_harvest (harvest_type, harvest_id, collection_id, "
                                               "status, date_requested, date_updated, warcs_count, warcs_bytes) "
                                               "VALUES (:t, :i, :c, 'completed success', now(), now(), :n, :b) "
                                               "RETURNING id"),
                                          {"t": harvest_type, "i": new(), "c": coll_pk, "n": len(warcs),
                                           "b": sum(warcs)}).scalar_one()
                conn.execute(text("INSERT INTO ui_harveststat (harvest_id, harvest_date, item, count) VALUES "
                                  "(:h, :d, 'tweets', :n)"), {"h": harvest_pk, "d": STATS_DAY, "n": sum(warcs)})
                for size in warcs:
                    warc_id, body = new(), os.urandom(size)
                    path = f"{harvest_root or '/sfm-collection-set-data'}/collection_set/{set_id}/{coll_id}/2026/" \
                           f"{warc_id}.warc.gz"
                    conn.execute(text("INSERT INTO ui_warc (harvest_id, warc_id, path, sha1, bytes, date_created, "
                                      "date_added, date_updated) VALUES (:h, :i, :p, :s, :b, now(), now(), now())"),
                                 {"h": harvest_pk, "i": warc_id, "p": path, "s": hashlib.sha1(body).hexdigest(),
                                  "b": size})
                    if harvest_root is not None and size != MISSING:
                        Path(path).parent.mkdir(parents=True, exist_ok=True)
                        Path(path).write_bytes(os.urandom(size) if size == MISMATCHED else body)
    return tokens


def expected() -> dict:
    collections = [c for _, cs in SITE for c in cs]
    by_type: dict[str, int] = {}
    for harvest_type, *_ in collections:
        by_type[harvest_type] = by_type.get(harvest_type, 0) + 1
    return {"collection_sets": len(SITE), "collections": len(collections),
            "active_collections": sum(c[1] for c in collections),
            "seeds": sum(len(c[2]) for c in collections), "active_seeds": sum(sum(c[2]) for c in collections),
            "credentials": 5, "harvests": sum(len(c[3]) for c in collections),
            "warcs": sum(len(h) for c in collections for h in c[3]),
            "warc_bytes": sum(sum(h) for c in collections for h in c[3]), "collections_by_type": by_type,
            # v1 timelines and Weibo have no API left (messages/retired.py)
            "not_harvestable": {"twitter_user_timeline": 1, "weibo_timeline": 1, "instagram_user": 1}}


def snapshot(url: str) -> list[tuple]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for t in ("ui_collectionset", "ui_collection", "ui_seed", "ui_harvest", "ui_warc")
                for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY id"))]
    engine.dispose()
    return rows


@pytest.fixture
def site(pg_url, tmp_path) -> Iterator[tuple[str, Path, dict[str, str]]]:
    """The seeded SFM database, its harvest volume (WARC files) and its credentials' JSON by platform."""
    harvest_root = tmp_path / "sfm-collection-set-data"
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        tokens = seed_site(conn, harvest_root)
    engine.dispose()
    yield pg_url, harvest_root, tokens


def run_import(url: str, data_root: Path, harvest_root: Path, key: str) -> subprocess.CompletedProcess:
    return swath("sfm", "import", "--db-url", url, "--json", data_root=data_root,
                 env={"SWATH_HARVEST_ROOT": str(harvest_root), "SWATH_SECRET_KEY": key})


def store_rows(store: Store) -> list[tuple]:
    with store.engine.connect() as conn:
        return [(name, *r) for name in ("sources", "secrets", "jobs", "warcs", "web_groups", "web_collection_sets",
                                        "web_changes")
                for r in conn.execute(text(f"SELECT * FROM {name} ORDER BY 1"))]


def harvestable() -> list[tuple]:
    known = {t.name for t in harvester_types()}
    return [c for _, cs in SITE for c in cs if c[0] in known]
