"""Replicas and `swath storage verify` / `replicate` (swath/replicas.py) against two buckets of the real SeaweedFS
(tests/seaweed.py): the primary with its prefix, the replica a second bucket on the same server (server-side copy)
and behind a second endpoint name (streamed copy). Never a mock of S3."""

from __future__ import annotations

import dataclasses
import hashlib
import json

import pytest
from click.testing import CliRunner

from swath.commands.storage import command as storage_cli
from swath.core.objects import store_for
from swath.harvesters.retry import RetryPolicy
from swath.messages.model import WarcCreated
from swath.monitor import record_warc_created
from swath.replicas import replicate_one
from swath.store import Store
from swath.store.storage_models import MISSING, REPLICA, SHA1, SIZE, WarcCopy
from swath.store.storage_repo import last_check, replication_lag
from tests.seaweed import ACCESS_KEY, SECRET_KEY

QUICK = RetryPolicy(retries=1, backoff=0.01)
COUNT = 4


@pytest.fixture
def both(s3_config, seaweed):
    """The config with a replica bucket on the same SeaweedFS."""
    return dataclasses.replace(s3_config, storage_replica_url=f"s3://{seaweed.new_bucket()}/copies",
                               storage_replica_endpoint=seaweed.endpoint, storage_replica_access_key_id=ACCESS_KEY,
                               storage_replica_secret_access_key=SECRET_KEY)


@pytest.fixture
def db(both):
    store = Store(url=both.db_url)
    yield store
    store.close()


def _stored_warcs(config, db, tmp_path, count=COUNT):
    """`count` WARC-like files uploaded to the primary and announced (the monitor's own record function); their
    (warc id, ObjectInfo, bytes)."""
    primary = store_for(config, retry=QUICK)
    stored = []
    for n in range(count):
        data = hashlib.sha256(b"warc %d" % n).digest() * (100 + 37 * n)  # each its own length and bytes
        path = tmp_path / f"h{n}-2026.warc.gz"
        path.write_bytes(data)
        info = primary.put_file(f"set1/coll1/2026/11/27/{path.name}", path)
        with db.session() as s:
            record_warc_created(s, WarcCreated(
                path=info.url, sha1=hashlib.sha1(data).hexdigest(), bytes=len(data), warc_id=f"w{n}",
                date_created="2026-11-27T06:00:00+00:00", collection_set_id="set1", collection_id="coll1",
                harvest_id=f"h{n}", harvest_type="generic_pages"), data_root=config.data_root)
        stored.append((f"w{n}", info, data))
    return stored


def _cli(config, *args):
    return CliRunner().invoke(storage_cli, list(args), obj=config, catch_exceptions=False)


def test_verify_finds_the_deleted_and_the_corrupted_replica_then_replicate_restores(both, db, tmp_path, seaweed):
    stored = _stored_warcs(both, db, tmp_path)
    with db.session() as s:
        assert replication_lag(s).unreplicated == COUNT  # announced, not yet copied
    for warc_id, info, _ in stored:  # what the upload path calls after each verified upload
        copy = replicate_one(both, db, warc_id=warc_id, info=info)
        assert (copy.size, copy.sha1) == (info.size, info.sha1)
    with db.session() as s:
        assert replication_lag(s).unreplicated == 0
    result = _cli(both, "verify", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] == 2 * COUNT

    replica = store_for(both, retry=QUICK, replica=True)
    deleted, corrupted = stored[1], stored[2]
    replica.delete(deleted[1].key)
    bucket, key = replica.url(corrupted[1].key).split("/", 3)[2:]
    # bytes of another length, the SHA-1 metadata kept (as a store's bit rot or a bad overwrite would)
    seaweed.client().put_object(Bucket=bucket, Key=key, Body=corrupted[2] + b"x", Metadata={"sha1": corrupted[1].sha1})

    result = _cli(both, "verify")
    assert result.exit_code == 1
    lines = [line.split("\t") for line in result.stdout.splitlines() if "\t" in line]
    assert sorted((line[0], line[1], line[2]) for line in lines) == sorted(
        [(MISSING, REPLICA, deleted[0]), (SIZE, REPLICA, corrupted[0])])
    assert result.stdout.splitlines()[-1].endswith(f"{2 * COUNT - 2} ok, 1 missing, 1 differ")
    with db.session() as s:
        check = last_check(s)
        assert (check.warcs, check.copies, check.ok, check.missing, check.differs) == (COUNT, 2 * COUNT,
                                                                                       2 * COUNT - 2, 1, 1)
        assert s.get(WarcCopy, (deleted[0], REPLICA)).result == MISSING
        assert replication_lag(s).unreplicated == 2  # the two bad copies count as not replicated

    result = _cli(both, "replicate")
    assert result.exit_code == 0, result.output
    assert replica.read_range(deleted[1].key, 0, deleted[1].size) == deleted[2]  # back, whole
    assert replica.read_range(corrupted[1].key, 0, corrupted[1].size) == corrupted[2]
    assert _cli(both, "verify").exit_code == 0
    with db.session() as s:
        assert replication_lag(s).unreplicated == 0


def test_deep_verify_catches_same_size_corruption_that_keeps_the_metadata(both, db, tmp_path, seaweed):
    stored = _stored_warcs(both, db, tmp_path, count=2)
    for warc_id, info, _ in stored:
        replicate_one(both, db, warc_id=warc_id, info=info)
    replica = store_for(both, retry=QUICK, replica=True)
    warc_id, info, data = stored[0]
    bucket, key = replica.url(info.key).split("/", 3)[2:]
    flipped = bytes([data[0] ^ 0xFF]) + data[1:]  # one byte changed: same size, same metadata
    seaweed.client().put_object(Bucket=bucket, Key=key, Body=flipped, Metadata={"sha1": info.sha1})
    assert _cli(both, "verify").exit_code == 0  # HEAD cannot see it: size and metadata are as stored
    result = _cli(both, "verify", "--deep", "--json")
    assert result.exit_code == 1
    findings = json.loads(result.stdout)["findings"]
    assert [(f["result"], f["target"], f["warc_id"]) for f in findings] == [(SHA1, REPLICA, warc_id)]
    assert hashlib.sha1(flipped).hexdigest() in findings[0]["detail"]


def test_a_replica_behind_another_endpoint_is_copied_by_streaming(both, db, tmp_path, seaweed):
    """Another endpoint name for the same server: no server-side copy, the bytes go through and are hashed."""
    other = dataclasses.replace(both, storage_replica_endpoint=seaweed.endpoint.replace("127.0.0.1", "localhost"))
    stored = _stored_warcs(other, db, tmp_path, count=1)
    warc_id, info, data = stored[0]
    replicate_one(other, db, warc_id=warc_id, info=info)
    replica = store_for(other, retry=QUICK, replica=True)
    assert replica.head(info.key).sha1 == hashlib.sha1(data).hexdigest()
    assert replica.read_range(info.key, 0, info.size) == data


def test_a_warc_still_in_the_data_root_is_checked_there_and_replicated_from_it(both, db, tmp_path):
    """A WARC harvested before the site moved to object storage (its path local): its primary copy is the file."""
    data = hashlib.sha256(b"old").digest() * 500
    path = both.data_root / "collections" / "set1" / "coll1" / "old.warc.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(data)
    with db.session() as s:
        record_warc_created(s, WarcCreated(
            path=str(path), sha1=hashlib.sha1(data).hexdigest(), bytes=len(data), warc_id="old",
            date_created="2026-01-01T00:00:00+00:00", collection_set_id="set1", collection_id="coll1",
            harvest_id="h-old", harvest_type="generic_pages"), data_root=both.data_root)
    result = _cli(both, "verify", "--json")
    assert result.exit_code == 1
    assert [(f["target"], f["result"]) for f in json.loads(result.stdout)["findings"]] == [(REPLICA, MISSING)]
    assert _cli(both, "replicate").exit_code == 0
    replica = store_for(both, retry=QUICK, replica=True)
    assert replica.read_range("collections/set1/coll1/old.warc.gz", 0, len(data)) == data
    result = _cli(both, "verify", "--deep", "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["ok"] == 2
    path.write_bytes(data[:-1] + b"\0")  # the local file damaged: --deep finds it
    result = _cli(both, "verify", "--deep", "--json")
    assert [(f["target"], f["result"]) for f in json.loads(result.stdout)["findings"]] == [("primary", SHA1)]


def test_the_monitor_records_a_warc_copied_by_the_upload_path_as_replicated(both, db, tmp_path):
    """The upload path copies with core.objects_copy.copy_to_replica before announcing; the monitor's HEAD of the
    replica records the copy, so only the WARC whose copy failed counts as lag."""
    from swath.core.objects_copy import copy_to_replica
    from swath.monitor import Replica, record
    from swath.replicas import replica_for_monitor

    primary = store_for(both, retry=QUICK)
    replica = Replica(config=both, store=replica_for_monitor(both))
    bodies = []
    for n in range(3):
        data = hashlib.sha256(b"up %d" % n).digest() * 64
        path = tmp_path / f"u{n}.warc.gz"
        path.write_bytes(data)
        info = primary.put_file(f"set1/coll1/{path.name}", path)
        if n != 1:  # the replica "failed" for WARC 1: announced all the same, caught up later
            assert copy_to_replica(both, info, sha1=hashlib.sha1(data).hexdigest(), retry=QUICK).size == len(data)
        bodies.append(WarcCreated(path=info.url, sha1=hashlib.sha1(data).hexdigest(), bytes=len(data),
                                  warc_id=f"u{n}", date_created="2026-11-27T06:00:00+00:00", collection_set_id="set1",
                                  collection_id="coll1", harvest_id=f"hu{n}", harvest_type="generic_pages").to_dict())
    for body in bodies:
        record(db, "warc_created", body, data_root=both.data_root, replica=replica)
    with db.session() as s:
        lag = replication_lag(s)
        assert lag.unreplicated == 1
        assert s.get(WarcCopy, ("u1", REPLICA)) is None and s.get(WarcCopy, ("u0", REPLICA)).replicated_at
    assert _cli(both, "replicate").exit_code == 0
    with db.session() as s:
        assert replication_lag(s).unreplicated == 0
    assert copy_to_replica(dataclasses.replace(both, storage_replica_url=""), info, sha1="0" * 40,
                           retry=QUICK) is None  # no replica configured: nothing to do
