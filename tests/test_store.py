"""The store on SQLite and the real PostgreSQL: migrations, sources, idempotent recording, claims."""

from __future__ import annotations

import datetime as dt

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import inspect

from swath.store import Store, monitor_repo, repo
from swath.store.db import alembic_config
from swath.store.models import (
    ACCEPTED,
    FAILURE,
    QUEUED,
    RUNNING,
    SUCCESS,
    Base,
    Job,
    Source,
)
from swath.store.secrets import SecretBox
from tests.requesterkit import TEST_SECRET_KEY, db_url, pg_url, store  # noqa: F401  (fixtures)

BOX = SecretBox(keys=(TEST_SECRET_KEY,))


def make_source(s, name: str = "blog", **kw) -> Source:
    args = dict(name=name, harvest_type="generic_pages", platform="generic", seeds=[{"id": "s1", "token": "t"}],
                options={}, credentials={"api_key": "stored"}, secrets={"api_key": "k-123"},
                box=BOX, collection_set_id="set", collection_id=None)
    args.update(kw)
    return repo.create_source(s, **args)


def status_body(job_id: str, status: str, posts: int, **extra) -> dict:
    body = {"id": job_id, "status": status, "date_started": "2024-01-02T00:00:00+00:00", "infos": [],
            "warnings": [], "errors": [], "stats": {"2024-01-02": {"posts": posts}}, "token_updates": {}, "uids": {},
            "warcs": {"count": 1, "bytes": 100}, "service": "Test", "host": "h", "instance": "1"}
    if status != RUNNING:
        body["date_ended"] = "2024-01-02T00:01:00+00:00"
    body.update(extra)
    return body


def test_migration_builds_the_models_tables_and_downgrades(db_url: str) -> None:  # noqa: F811
    store = Store(url=db_url)
    tables = set(inspect(store.engine).get_table_names())
    assert set(Base.metadata.tables) <= tables
    cfg = alembic_config()
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "base")
    assert not set(Base.metadata.tables) & set(inspect(store.engine).get_table_names())
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
        head = ScriptDirectory.from_config(cfg).get_current_head()
    assert set(Base.metadata.tables) <= set(inspect(store.engine).get_table_names())
    with store.engine.connect() as conn:
        from alembic.runtime.migration import MigrationContext

        assert MigrationContext.configure(conn).get_current_revision() == head
    store.close()


def test_sources_by_name_or_id_soft_delete_and_purge(store: Store) -> None:  # noqa: F811
    with store.session() as s:
        src = make_source(s)
        other = make_source(s, name="other", secrets={})
        job = repo.add_job(s, job_id="j1", source=src, routing_key="harvest.start.generic.generic_pages",
                           trigger="manual")
        repo.attach(s, src, [("r1", "i1"), ("r2", "i2")])
    with store.session() as s:
        assert repo.find_source(s, "blog").id == src.id == repo.find_source(s, src.id).id
        assert src.collection_id == src.id  # no collection given: the source id
        assert repo.secrets_of(s, src, BOX) == {"api_key": "k-123"}
        with pytest.raises(repo.Conflict):
            make_source(s, name="blog")
    with store.session() as s:
        repo.soft_delete(s, repo.find_source(s, "blog"))
    with store.session() as s:
        with pytest.raises(repo.NotFound):
            repo.find_source(s, "blog")
        assert [x.name for x in repo.list_sources(s)] == ["other"]
        assert repo.find_source(s, "blog", deleted=True).deleted_at is not None
        assert repo.purge(s) == ["blog"]
    with store.session() as s:
        assert [x.name for x in repo.list_sources(s, deleted=True)] == [other.name]
        assert repo.secrets_of(s, src, BOX) == {} and repo.attachments(s, src.id) == {}
        assert s.get(Job, job.id).source_id is None  # history stays


def test_recording_is_idempotent_and_never_goes_back(store: Store) -> None:  # noqa: F811
    key = "harvest.status.generic.generic_pages"
    final = status_body("h1", SUCCESS, 12)
    for body in (status_body("h1", RUNNING, 5), final, status_body("h1", RUNNING, 7), final):
        with store.session() as s:
            monitor_repo.record_harvest_status(s, body, routing_key=key)
    with store.session() as s:
        job = repo.get_job(s, "h1")
        assert (job.status, job.stats, job.trigger) == (SUCCESS, final["stats"], "external")
        assert len(repo.list_jobs(s)) == 1
    warcs = [dict(warc_id=f"w{i}", path=f"/d/c/{i}.warc.gz", sha1="a" * 40, size=100 * (i + 1),
                  date_created="2024-01-02T00:00:00+00:00", collection_set_id="set", collection_id="col",
                  harvest_id="h1", harvest_type="generic_pages") for i in range(3)]
    for w in warcs + warcs[:2]:  # two redeliveries
        with store.session() as s:
            monitor_repo.record_warc(s, **w)
    with store.session() as s:
        assert repo.warc_volume(s) == [("set", "col", 3, sum(w["size"] for w in warcs))]
        assert [w.id for w in repo.warcs_of(s, ["h1"])["h1"]] == ["w0", "w1", "w2"]
        for _ in range(2):
            monitor_repo.record_rejected(s, digest="d" * 40, routing_key=key, code="schema_invalid", message="bad")
    with store.session() as s:
        assert monitor_repo.rejected(s)[0] == 1


def test_claim_due_writes_one_launch_record_per_slot_and_never_overlaps(store: Store) -> None:  # noqa: F811
    t0 = dt.datetime(2024, 1, 2, 12, 0, 0)
    step = dt.timedelta(seconds=10)

    def claim(now: dt.datetime) -> list[str]:
        with store.session() as s:
            return [j.id for j in repo.claim_due(
                s, now=now, job_id=lambda src, slot: f"{src.id}-{slot:%H%M%S}",
                routing_key=lambda src: "harvest.start.generic.generic_pages",
                next_after=lambda src, at: src.next_due + step * (int((at - src.next_due) / step) + 1))]

    with store.session() as s:
        src = make_source(s)
        pending = make_source(s, name="pending", secrets={})
        for x in (src, pending):
            repo.set_schedule(s, x, kind="interval", expr="10s", next_due=t0)
        repo.set_validation(s, src, ACCEPTED, None)
    assert claim(t0) == [f"{src.id}-120000"]  # the pending source is never claimed
    assert claim(t0 + step) == []  # the first job is still queued: no overlap, the slot waits
    with store.session() as s:
        repo.get_job(s, f"{src.id}-120000").status = FAILURE
    assert claim(t0 + 3.5 * step) == [f"{src.id}-120010"]  # missed slots coalesce into one run
    with store.session() as s:
        assert repo.find_source(s, src.id).next_due == t0 + 4 * step
        assert repo.get_job(s, f"{src.id}-120010").status == QUEUED


def test_postgres_claims_skip_rows_another_scheduler_holds(pg_url: str) -> None:  # noqa: F811
    from tests.requesterkit import empty_tables

    empty_tables(pg_url)
    store = Store(url=pg_url)
    t0 = dt.datetime(2024, 1, 2, 12, 0, 0)
    with store.session() as s:
        src = make_source(s)
        repo.set_schedule(s, src, kind="interval", expr="10s", next_due=t0)
        repo.set_validation(s, src, ACCEPTED, None)
    kw = dict(now=t0, job_id=lambda x, slot: f"{x.id}-{slot:%H%M%S}", routing_key=lambda x: "k",
              next_after=lambda x, at: at + dt.timedelta(seconds=10))
    with store.session() as first:
        assert len(repo.claim_due(first, **kw)) == 1
        with store.session() as second:  # runs while the first holds the row lock
            assert repo.claim_due(second, **kw) == []
    with store.session() as s:
        assert len(repo.list_jobs(s)) == 1
    store.close()


def test_models_and_migrations_agree(store: Store) -> None:  # noqa: F811
    """A model change without a migration shows up here (autogenerate finds nothing to do at head)."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    with store.engine.connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), Base.metadata) == []
