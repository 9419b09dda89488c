"""Retention expiry (swath/purge.py): a collection deleted in the web is purged, WARCs, index rows and exports,
only once its retention has ended: by the scheduler's expiry and by `swath harvest purge --expired`, the one code
path; a deactivated collection waits for an admin's plain `swath harvest purge`. A WARC path outside the data
root is never removed, and an emptied deleted collection set goes with its last collection."""

from __future__ import annotations

import dataclasses
import datetime as dt
from pathlib import Path

from sqlalchemy import select

from swath.core.config import Config
from swath.purge import mark_deleted
from swath.requester import Requester
from swath.scheduler import Scheduler
from swath.store import Store, repo, web_repo
from swath.store.models import Export, Source, Warc, utcnow
from swath.store.web_models import CollectionSet
from tests.purgekit import export_on_disk, warcs_on_disk
from tests.requesterkit import swath
from tests.test_store import make_source
from tests.webkit import web_config


def _sources(config: Config, store: Store) -> dict[str, str]:
    with store.session() as s:
        group = web_repo.group_named(s, "lib", create=True)
        web_repo.add_set(s, set_id="set", name="Set", description=None, group=group)
        return {name: make_source(s, name=name).id for name in ("expired", "later", "paused")}


def test_the_expiry_purges_only_what_its_retention_let_go(config: Config, tmp_path: Path) -> None:
    config = web_config(dataclasses.replace(config, purge_after_days=3))
    store = Store(url=config.db_url)
    ids = _sources(config, store)
    files = {name: warcs_on_disk(config, store, ident, [name.encode() * (100 + n) for n in range(2)])
             for n, (name, ident) in enumerate(ids.items())}
    exported = export_on_disk(config, store, ids["expired"], "x1", {"a.csv": b"id\n" * 40})
    outside = tmp_path / "elsewhere.warc.gz"
    outside.write_bytes(b"outside the data root")
    now = utcnow()
    with store.session() as s:
        row = s.get(Warc, f"w-{ids['expired']}-0")
        s.add(Warc(id="w-outside", path=str(outside), sha1="0" * 40, bytes=21, date_created=row.date_created,
                   collection_set_id="set", collection_id=row.collection_id, harvest_id=row.harvest_id,
                   harvest_type=row.harvest_type))
        mark_deleted(s, s.get(Source, ids["expired"]), purge_after=now - dt.timedelta(hours=1))
        mark_deleted(s, s.get(Source, ids["later"]), purge_after=now + dt.timedelta(days=1))
        repo.soft_delete(s, s.get(Source, ids["paused"]))  # deactivated: no retention, no expiry
        s.get(CollectionSet, "set").purge_after = now + dt.timedelta(days=1)  # the set deleted with them

    scheduler = Scheduler(requester=Requester(config=config, store=store), clock=lambda: now)
    scheduler.expire(now)
    assert scheduler.purged == ["expired"]
    assert not any(p.exists() for p in [*files["expired"], *exported]) and outside.exists()
    assert all(p.exists() for name in ("later", "paused") for p in files[name])
    with store.session() as s:
        assert s.get(Source, ids["expired"]) is None and s.get(Export, "x1") is None
        assert s.scalars(select(Warc.id).where(Warc.collection_id == s.get(Source, ids["later"]).collection_id
                                               )).all() != []
        assert s.get(Warc, "w-outside") is None  # its row goes: the index says nothing of a purged collection

    assert swath(config, "harvest", "purge", "--expired", "--json")["purged"] == []  # "later" is not due yet
    with store.session() as s:
        s.get(Source, ids["later"]).purge_after = now - dt.timedelta(minutes=1)
        s.get(CollectionSet, "set").purge_after = now - dt.timedelta(minutes=1)
    done = swath(config, "harvest", "purge", "--expired", "--json")
    assert done["purged"] == ["later"] and done["warcs"] == len(files["later"])
    assert done["bytes_freed"] == sum(len(b"later") * (100 + n) for n in range(2))
    with store.session() as s:
        assert s.get(CollectionSet, "set") is not None  # "paused" is still in it
    assert all(p.exists() for p in files["paused"])
    assert swath(config, "harvest", "purge", "--json")["purged"] == ["paused"]  # an admin's purge of the rest
    with store.session() as s:
        assert s.scalars(select(Warc)).all() == [] and s.get(CollectionSet, "set") is None
    store.close()
