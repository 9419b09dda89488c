"""Names in the web application are the group's own: two groups may each have a collection "Twitter news",
a clash is only ever with one's own group's collections and says nothing of the others, on SQLite and on
PostgreSQL (whose unique constraint migration 0006 drops)."""

from __future__ import annotations

import pytest

from swath.core.config import Config
from swath.store import Store, repo
from tests.requesterkit import db_url, pg_url  # noqa: F401
from tests.test_web import make_oai, make_set
from tests.webkit import member, post, web_config


def test_collection_names_are_unique_per_group_and_a_clash_names_no_other_group(config: Config,
                                                                               db_url: str) -> None:  # noqa: F811
    config = web_config(config, db_url)
    store = Store(url=db_url)
    ann, bob = member(config, store, "ann", "alpha"), member(config, store, "bob", "beta")
    ann_set, bob_set = make_set(ann, "Alpha news"), make_set(bob, "Beta secrets")
    make_oai(bob, bob_set, name="Twitter news", seeds="https://beta.example.org/oai")
    make_oai(ann, ann_set, name="Twitter news")  # another group's name is free
    second = make_set(ann, "Alpha archive")
    response = post(ann, f"/sets/{second}/new", {"type": "oai_pmh", "name": "Twitter news",
                                                  "seeds": "https://oai.example.org/oai"}, page=f"/sets/{second}")
    assert response.status_code == 400 and "your group has a collection named" in response.text
    for other in ("Beta secrets", "beta.example.org", "bob"):
        assert other not in response.text, other
    with store.session() as s:
        assert sorted(src.collection_set_id for src in repo.list_sources(s)) == sorted([ann_set, bob_set])
        with pytest.raises(repo.Conflict, match="name one by its id"):  # the CLI's lookup by name
            repo.find_source(s, "Twitter news")
    store.close()


def test_migration_0006_keeps_the_rows_that_point_at_sources(db_url: str) -> None:  # noqa: F811
    """SQLite's batch mode drops and copies `sources`: its secrets, attachments and jobs must survive."""
    from alembic import command
    from sqlalchemy import select

    from swath.store.db import alembic_config
    from swath.store.models import Attachment, Job, Secret, Source

    store = Store(url=db_url)
    with store.session() as s:
        src = Source(id="s1", name="blog", harvest_type="generic_pages", platform="generic", seeds=[], options={},
                     credentials={"api_key": "stored"}, collection_set_id="set", collection_id="s1")
        s.add(src)
        s.flush()
        s.add_all([Secret(source_id="s1", name="api_key", value="sealed"),
                   Attachment(source_id="s1", remote_id="r1", item_id="i1")])
        repo.add_job(s, job_id="j1", source=src, routing_key="harvest.start.generic.generic_pages", trigger="manual")
    cfg = alembic_config()
    for target in ("0005", "head"):
        with store.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            (command.downgrade if target == "0005" else command.upgrade)(cfg, target)
    with store.session() as s:
        assert [(r.source_id, r.value) for r in s.scalars(select(Secret))] == [("s1", "sealed")]
        assert [r.remote_id for r in s.scalars(select(Attachment))] == ["r1"]
        assert s.get(Job, "j1").source_id == "s1"
    store.close()

