"""`swath sfm import` on a database with sfm-ui's schema, seeded here (tests/sfmkit.py), with its WARCs as files
in a harvest volume: `--dry-run` counts the rows seeded and writes nothing; the import brings them into swath's
store (read back through the store's own queries), checks each WARC file against its row (one differs, one is
missing: reported, not indexed), and a second run changes nothing; the web application shows what came in."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

from sqlalchemy import create_engine, select

from swath.messages import codes, retired
from swath.store import Store, repo, web_repo
from swath.store.models import utcnow
from swath.store.secrets import SecretBox, generate_key
from swath.store.web_models import CollectionSet
from tests.sfmkit import (  # noqa: F401  (pg_url, site: fixtures)
    MISMATCHED,
    MISSING,
    PLATFORMS,
    SCHEDULES,
    SITE,
    STATS_DAY,
    expected,
    harvestable,
    pg_url,
    run_import,
    seed_site,
    site,
    snapshot,
    store_rows,
)
from tests.test_cli import swath
from tests.webkit import client, login, user, web_config


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


def test_a_database_without_sfm_tables_is_refused(pg_url, data_root):
    for args in (("--dry-run",), ()):
        done = swath("sfm", "import", "--db-url", pg_url, *args, "--json", data_root=data_root,
                     env={"SWATH_SECRET_KEY": generate_key()})
        assert done.returncode == 1
        assert json.loads(done.stdout)["error"]["code"] == codes.SFM_SCHEMA_MISSING


def test_import_brings_the_site_into_the_store_with_its_counts_and_again_changes_nothing(site, data_root):
    url, harvest_root, tokens = site
    key = generate_key()
    before = snapshot(url)
    started = utcnow()
    done = run_import(url, data_root, harvest_root, key)
    assert done.returncode == 1, done.stderr  # imported, with two WARCs reported
    report = json.loads(done.stdout)
    for values in tokens.values():  # no credential value in what it prints
        assert all(v not in done.stdout + done.stderr for v in json.loads(values).values() if v)
    ours = harvestable()
    assert report["imported"] == {
        "groups": 1, "collection_sets": len(SITE), "sources": len(ours),
        "seeds": sum(sum(c[2]) for c in ours),
        "credentials_sealed": sum(sum(1 for v in json.loads(tokens[PLATFORMS[c[0]]]).values() if v) for c in ours),
        "schedules": sum(1 for c in ours if c[1] and SCHEDULES.get(c[0])),
        "jobs": sum(len(c[3]) for c in ours),
        "warcs": sum(len(h) for _, cs in SITE for c in cs for h in c[3]) - 2,
        "warc_bytes": sum(sum(h) for _, cs in SITE for c in cs for h in c[3]) - MISMATCHED - MISSING}
    assert report["left_out"] == {"inactive_seeds": sum(len(c[2]) - sum(c[2]) for c in ours)}
    gone = retired.retired_types()
    assert report["skipped"] == {c[0]: {"code": codes.API_RETIRED if c[0] in gone else codes.UNKNOWN_TYPE,
                                        "collections": 1, "seeds": len(c[2]),
                                        "harvests": len(c[3])} for _, cs in SITE for c in cs if c not in ours}
    problems = {p["code"]: p for p in report["warc_problems"]}
    assert sorted(problems) == [codes.SFM_WARC_MISMATCH, codes.SFM_WARC_MISSING]
    assert "sha1" in problems[codes.SFM_WARC_MISMATCH]["message"]  # same size, other content
    assert not Path(problems[codes.SFM_WARC_MISSING]["path"]).exists()
    assert report["pending"] == []
    # each imported collection's counts equal SFM's, but the one whose WARC did not match
    unequal = [c["type"] for c in report["collections"] if not c["equal"]]
    assert unequal == ["twitter_search_2"] and len(report["collections"]) == len(ours)

    store = Store(url=f"sqlite:///{data_root / 'swath.sqlite'}")
    box = SecretBox(keys=(key,))
    with store.session() as s:
        sources = {src.harvest_type: src for src in repo.list_sources(s)}
        assert sorted(sources) == sorted(c[0] for c in ours)
        for harvest_type, _, seeds, harvests in ours:
            src = sources[harvest_type]
            assert len(src.seeds) == sum(seeds) and src.validation == "accepted"
            assert len(repo.list_jobs(s, source_id=src.id)) == len(harvests)
            warcs = repo.warcs_for_collection(s, src.collection_id)
            expected_sizes = sorted(b for h in harvests for b in h if b != MISMATCHED)
            assert sorted(w.bytes for w in warcs) == expected_sizes
            assert all(w.rel_path and (harvest_root / w.rel_path).stat().st_size == w.bytes for w in warcs)
            # the credential, sealed: opens to sfm-ui's non-empty values, and the store holds no plain copy
            want = {k: v for k, v in json.loads(tokens[PLATFORMS[harvest_type]]).items() if v}
            assert repo.secrets_of(s, src, box) == want and set(src.credentials.values()) == {"stored"}
        search = sources["twitter_search_2"]
        assert search.options == {"incremental": True} and search.seeds[0]["token"] == {"query": "gwu0"}
        assert (search.schedule_kind, search.schedule_expr) == ("interval", "1d")
        # SFM harvested it just now (the rows' now()): next due a day on, not at once
        assert search.next_due is not None and search.next_due - started > dt.timedelta(hours=23)
        assert sources["tumblr_blog_posts"].schedule_kind is None
        jobs = repo.list_jobs(s, source_id=search.id)
        assert {j.status for j in jobs} == {"completed success"} and all(j.published_at for j in jobs)
        assert sorted(j.warcs_bytes for j in jobs) == sorted(sum(h) for h in SITE[0][1][0][3])
        assert sorted(j.stats[STATS_DAY]["tweets"] for j in jobs) == sorted(sum(h) for h in SITE[0][1][0][3])
        assert len(web_repo.list_groups(s)) == 1
        sets = list(s.scalars(select(CollectionSet)))
        assert len(sets) == len(SITE) and {src.collection_set_id for src in sources.values()} <= {r.id for r in sets}
        assert {r.group_id for r in sets} == {web_repo.group_named(s, "staff").id}
        # the web application's collections of a set: the set's harvestable collections
        by_name = {r.name: r.id for r in sets}
        for set_name, collections in SITE:
            assert sorted(src.harvest_type for src in web_repo.collections_of(s, by_name[set_name])) == sorted(
                c[0] for c in collections if c in ours)
    rows = store_rows(store)
    assert all(v not in repr(rows) for t in tokens.values() for v in json.loads(t).values() if v)

    again = run_import(url, data_root, harvest_root, key)
    second = json.loads(again.stdout)
    assert second["imported"] == {} and second["unchanged"]["sources"] == len(ours)
    assert len(second["warc_problems"]) == 2  # still reported, still not indexed
    assert store_rows(store) == rows
    assert snapshot(url) == before  # SFM's database is only read
    listed = swath("harvest", "sources", "--json", data_root=data_root)
    assert sorted(d["type"] for d in json.loads(listed.stdout)) == sorted(c[0] for c in ours)
    store.close()


def test_without_a_key_the_import_refuses_before_writing(site, data_root):
    url, harvest_root, _ = site
    done = swath("sfm", "import", "--db-url", url, "--json", data_root=data_root,
                 env={"SWATH_HARVEST_ROOT": str(harvest_root), "SWATH_SECRET_KEY": ""})
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == codes.CREDENTIAL_KEY_MISSING
    store = Store(url=f"sqlite:///{data_root / 'swath.sqlite'}")
    with store.session() as s:
        assert repo.list_sources(s, deleted=True) == [] and repo.warcs_for_collection(s) == []
    store.close()


def test_the_web_application_shows_the_imported_sets_and_collections_to_the_sfm_group(site, config):
    url, harvest_root, tokens = site
    config = web_config(config)
    done = swath("sfm", "import", "--db-url", url, "--json", data_root=config.data_root,
                 env={"SWATH_HARVEST_ROOT": str(harvest_root), "SWATH_SECRET_KEY": config.secret_key,
                      "SWATH_DB_URL": config.db_url})
    report = json.loads(done.stdout)
    store = Store(url=config.db_url)
    user(store, "ada", groups=("staff",))  # a member of SFM's group, not an admin
    c = client(config, store)
    login(c, "ada")
    home = c.get("/").text
    assert all(set_name in home for set_name, _ in SITE)
    values = [v for t in tokens.values() for v in json.loads(t).values() if v]
    for collection in report["collections"]:
        page = c.get(f"/collections/{collection['sfm_id']}")
        assert page.status_code == 200 and collection["source"] in page.text
        assert not any(v in page.text for v in values)
    store.close()
