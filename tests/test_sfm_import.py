"""`swath sfm import --dry-run` on a database with sfm-ui's schema (the tables and columns of sfm-ui's
models, github.com/gwu-libraries/sfm-ui sfm/ui/models.py), seeded here, in a PostgreSQL database made and
dropped by the test: the counts it prints are the rows seeded; nothing is written."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, text

from swath.messages import codes
from tests.test_cli import swath
from tests.test_requester_kit import fresh_database

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
CREATE TABLE ui_warc (id serial PRIMARY KEY, harvest_id integer NOT NULL REFERENCES ui_harvest(id),
  warc_id varchar(32) UNIQUE NOT NULL, path text NOT NULL, sha1 varchar(42) NOT NULL, bytes integer NOT NULL,
  date_created timestamptz NOT NULL, date_added timestamptz NOT NULL, date_updated timestamptz NOT NULL);
"""

# (set name, [(harvest type, active?, [seed active? ...], [[warc bytes ...] per harvest])])
SITE = [
    ("elections", [("twitter_search_2", True, [True, True, False], [[1200, 3400], [560]]),
                   ("twitter_user_timeline", False, [True], [[90]])]),
    ("museums", [("flickr_user", True, [True, True], [[77000]]),
                 ("weibo_timeline", False, [], []),
                 ("tumblr_blog_posts", True, [True], [])]),
    ("empty set", []),
]


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL database of this test's own, dropped after it."""
    with fresh_database("swath_sfm_test") as url:
        yield url


def new() -> str:
    return uuid.uuid4().hex  # sfm-ui's ids: uuid4 hex (models.default_uuid)


def seed_site(conn) -> None:
    conn.execute(text(SCHEMA))
    conn.execute(text("INSERT INTO auth_group (name) VALUES ('staff')"))
    conn.execute(text("INSERT INTO ui_user (username, password) VALUES ('ada', 'x')"))
    for platform in ("twitter2", "twitter", "flickr", "weibo", "tumblr"):
        conn.execute(text("INSERT INTO ui_credential (credential_id, name, user_id, platform, token, is_active, "
                          "date_added, date_updated) VALUES (:c, :p, 1, :p, :t, true, now(), now())"),
                     {"c": new(), "p": platform, "t": json.dumps({"key": new()})})
    for set_name, collections in SITE:
        set_pk = conn.execute(text("INSERT INTO ui_collectionset (collection_set_id, group_id, name, description, "
                                   "is_visible, date_added, date_updated) VALUES (:i, 1, :n, '', true, now(), now()) "
                                   "RETURNING id"), {"i": new(), "n": set_name}).scalar_one()
        for harvest_type, active, seeds, harvests in collections:
            coll_pk = conn.execute(text("INSERT INTO ui_collection (collection_id, collection_set_id, credential_id, "
                                        "harvest_type, name, is_on, is_active, date_added, date_updated) VALUES "
                                        "(:i, :s, 1, :t, :t, :a, :a, now(), now()) RETURNING id"),
                                   {"i": new(), "s": set_pk, "t": harvest_type, "a": active}).scalar_one()
            for seed_active in seeds:
                conn.execute(text("INSERT INTO ui_seed (collection_id, seed_id, token, uid, is_active, is_valid, "
                                  "date_added, date_updated) VALUES (:c, :i, 'gwu', '', :a, true, now(), now())"),
                             {"c": coll_pk, "i": new(), "a": seed_active})
            for warcs in harvests:
                harvest_pk = conn.execute(text("INSERT INTO ui_harvest (harvest_type, harvest_id, collection_id, "
                                               "status, date_requested, date_updated) VALUES (:t, :i, :c, "
                                               "'completed success', now(), now()) RETURNING id"),
                                          {"t": harvest_type, "i": new(), "c": coll_pk}).scalar_one()
                for size in warcs:
                    conn.execute(text("INSERT INTO ui_warc (harvest_id, warc_id, path, sha1, bytes, date_created, "
                                      "date_added, date_updated) VALUES (:h, :i, :p, :s, :b, now(), now(), now())"),
                                 {"h": harvest_pk, "i": new(), "p": f"/sfm-collection-set-data/{new()}.warc.gz",
                                  "s": new(), "b": size})


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
            "not_harvestable": {"twitter_user_timeline": 1, "weibo_timeline": 1}}


def snapshot(url: str) -> list[tuple]:
    engine = create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for t in ("ui_collectionset", "ui_collection", "ui_seed", "ui_harvest", "ui_warc")
                for r in conn.execute(text(f"SELECT * FROM {t} ORDER BY id"))]
    engine.dispose()
    return rows


def test_dry_run_counts_what_the_sfm_database_holds_and_writes_nothing(pg_url, data_root):
    engine = create_engine(pg_url)
    with engine.begin() as conn:
        seed_site(conn)
    engine.dispose()
    before = snapshot(pg_url)
    done = swath("sfm", "import", "--db-url", pg_url, "--dry-run", "--json", data_root=data_root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == expected()
    human = swath("sfm", "import", "--db-url", pg_url, "--dry-run", data_root=data_root)
    assert "collection sets: 3" in human.stdout and "weibo_timeline (1)" in human.stdout
    assert snapshot(pg_url) == before


def test_a_database_without_sfm_tables_or_without_dry_run_is_refused(pg_url, data_root):
    done = swath("sfm", "import", "--db-url", pg_url, "--dry-run", "--json", data_root=data_root)
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == codes.SFM_SCHEMA_MISSING
    unfinished = swath("sfm", "import", "--db-url", pg_url, data_root=data_root)
    assert unfinished.returncode == 2 and "--dry-run" in unfinished.stderr
