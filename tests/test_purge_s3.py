"""Purge with object storage (swath/purge.py): a purged collection's WARCs stored as s3:// objects are deleted from
the primary bucket and the replica, not only its local files; an s3:// path naming another bucket is skipped and
left alone. Against the real SeaweedFS (tests/seaweed.py) through `swath harvest purge`, never a mock of S3."""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib

from sqlalchemy import select

from swath.core.objects import store_for
from swath.harvesters.retry import RetryPolicy
from swath.messages.model import WarcCreated
from swath.monitor import record_warc_created
from swath.purge import mark_deleted
from swath.store import Store, web_repo
from swath.store.models import Source, Warc, utcnow
from tests.purgekit import warcs_on_disk
from tests.requesterkit import swath
from tests.seaweed import ACCESS_KEY, SECRET_KEY
from tests.test_store import make_source
from tests.webkit import web_config

QUICK = RetryPolicy(retries=1, backoff=0.01)


def _env(config) -> dict[str, str]:
    return {"SWATH_STORAGE_URL": config.storage_url, "SWATH_STORAGE_ENDPOINT": config.storage_endpoint,
            "SWATH_STORAGE_ACCESS_KEY_ID": ACCESS_KEY, "SWATH_STORAGE_SECRET_ACCESS_KEY": SECRET_KEY,
            "SWATH_STORAGE_REPLICA_URL": config.storage_replica_url,
            "SWATH_STORAGE_REPLICA_ENDPOINT": config.storage_replica_endpoint,
            "SWATH_STORAGE_REPLICA_ACCESS_KEY_ID": ACCESS_KEY, "SWATH_STORAGE_REPLICA_SECRET_ACCESS_KEY": SECRET_KEY}


def _stored(config, store: Store, source_id: str, blobs: list[bytes]) -> list[str]:
    """One object per blob in the primary and the replica (as an upload and its replica copy leave them), each
    announced by a warc_created with its s3:// URL; their keys."""
    primary, replica = store_for(config, retry=QUICK), store_for(config, retry=QUICK, replica=True)
    keys = []
    with store.session() as s:
        src = s.get(Source, source_id)
        for n, blob in enumerate(blobs):
            path = config.data_root / f"upload-{source_id}-{n}.warc.gz"
            path.write_bytes(blob)
            key = f"collections/{src.collection_set_id}/{src.collection_id}/2026/11/27/{src.name}-{n}.warc.gz"
            sha1 = hashlib.sha1(blob).hexdigest()
            info = primary.put_file(key, path, sha1=sha1)
            replica.put_file(key, path, sha1=sha1)
            path.unlink()
            record_warc_created(s, WarcCreated(
                path=info.url, sha1=sha1, bytes=len(blob), warc_id=f"s3-{source_id}-{n}",
                date_created="2026-11-27T06:00:00+00:00", collection_set_id=src.collection_set_id,
                collection_id=src.collection_id, harvest_id=f"run-{source_id}", harvest_type="oai_pmh"),
                data_root=config.data_root)
            keys.append(key)
    return keys


def test_purge_deletes_the_objects_in_the_primary_and_the_replica(s3_config, seaweed, tmp_path):
    config = web_config(dataclasses.replace(
        s3_config, storage_replica_url=f"s3://{seaweed.new_bucket()}/copies", storage_replica_endpoint=seaweed.endpoint,
        storage_replica_access_key_id=ACCESS_KEY, storage_replica_secret_access_key=SECRET_KEY))
    store = Store(url=config.db_url)
    with store.session() as s:
        web_repo.add_set(s, set_id="set", name="Set", description=None,
                         group=web_repo.group_named(s, "lib", create=True))
        ids = {name: make_source(s, name=name).id for name in ("gone", "kept")}
    blobs = {name: [hashlib.sha256(name.encode()).digest() * (50 + 7 * n) for n in range(3)] for name in ids}
    keys = {name: _stored(config, store, ident, blobs[name]) for name, ident in ids.items()}
    local = warcs_on_disk(config, store, ids["gone"], [b"an older local WARC" * 10])  # from before object storage
    elsewhere = seaweed.new_bucket()  # an s3:// path in the index that is not the configured store's
    seaweed.client().put_object(Bucket=elsewhere, Key="x/foreign.warc.gz", Body=b"not ours")
    with store.session() as s:
        row = s.get(Warc, f"w-{ids['gone']}-0")
        s.add(Warc(id="w-foreign", path=f"s3://{elsewhere}/x/foreign.warc.gz", sha1="0" * 40, bytes=8,
                   date_created=row.date_created, collection_set_id=row.collection_set_id,
                   collection_id=row.collection_id, harvest_id=row.harvest_id, harvest_type=row.harvest_type))
        mark_deleted(s, s.get(Source, ids["gone"]), purge_after=utcnow() - dt.timedelta(hours=1))

    # a process without the store's settings refuses (a coded error) and keeps every row, object and file
    refused = swath(config, "harvest", "purge", "--expired", expect=None)
    assert refused.exit_code != 0 and "storage_refused" in refused.output, refused.output
    with store.session() as s:
        assert s.get(Source, ids["gone"]) is not None and s.get(Warc, f"s3-{ids['gone']}-0") is not None
    assert local[0].exists() and store_for(config, retry=QUICK).head(keys["gone"][0]) is not None

    done = swath(config, "harvest", "purge", "--expired", "--json", env=_env(config))
    assert done["purged"] == ["gone"] and done["warcs"] == len(blobs["gone"]) + 2
    assert done["bytes_freed"] == sum(map(len, blobs["gone"])) + len(b"an older local WARC" * 10)
    assert done["skipped"] == [f"s3://{elsewhere}/x/foreign.warc.gz"]
    primary, replica = store_for(config, retry=QUICK), store_for(config, retry=QUICK, replica=True)
    for key in keys["gone"]:
        assert primary.head(key) is None and replica.head(key) is None, key
    for key, blob in zip(keys["kept"], blobs["kept"], strict=True):  # another collection's objects stay
        assert primary.read_range(key, 0, len(blob)) == blob == replica.read_range(key, 0, len(blob))
    assert not local[0].exists()
    assert seaweed.client().get_object(Bucket=elsewhere, Key="x/foreign.warc.gz")["Body"].read() == b"not ours"
    with store.session() as s:
        assert s.scalars(select(Warc.id).where(Warc.harvest_id == f"run-{ids['gone']}")).all() == []
        assert len(s.scalars(select(Warc.id).where(Warc.harvest_id == f"run-{ids['kept']}")).all()) == 3
    store.close()
