"""Replica on upload (harvesters/uploads.py): each verified upload is copied to the replica bucket before its WARC
is announced; a replica that fails is lag (a `replica_lag` warning), never a lost or unannounced WARC, and
`swath storage replicate` catches up. Two buckets of the real SeaweedFS (tests/seaweed.py), never a mock of S3."""

from __future__ import annotations

import dataclasses
import hashlib
import uuid

from click.testing import CliRunner

from swath.commands.storage import command as storage_cli
from swath.harvesters.coordination import LocalFiles
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.messages.model import WarcCreated
from swath.monitor import record_warc_created
from swath.store import Store
from tests.enginekit import PagedApi, context, routing_key, start_message
from tests.fakes.httpserver import FakeServer, Response
from tests.seaweed import ACCESS_KEY, SECRET_KEY


def _with_replica(config, seaweed, bucket: str):
    return dataclasses.replace(config, warc_max_bytes=3000,  # several WARCs
                               storage_replica_url=f"s3://{bucket}/copies", storage_replica_endpoint=seaweed.endpoint,
                               storage_replica_access_key_id=ACCESS_KEY, storage_replica_secret_access_key=SECRET_KEY)


def _harvest(config):
    with FakeServer() as server:
        PagedApi(server, pages=12, per_page=5, delay=0.05)  # rotation between pages
        ctx, published = context(config)
        # one runner in this process: a flock claim and the state file suffice
        run_harvest(start_message(server.url + "/pages"), routing_key=routing_key(), ctx=ctx,
                    coordination=LocalFiles(config.data_root))
    return published


def _replica_object(seaweed, config, url: str) -> bytes | None:
    """The replica's copy of the primary object `url` (same key below the replica's prefix), or None."""
    primary_bucket, _, primary_prefix = config.storage_url.removeprefix("s3://").partition("/")
    bucket, _, prefix = config.storage_replica_url.removeprefix("s3://").partition("/")
    key = prefix + "/" + url.removeprefix(f"s3://{primary_bucket}/{primary_prefix}/")
    client = seaweed.client()
    try:
        return client.get_object(Bucket=bucket, Key=key)["Body"].read()
    except (client.exceptions.NoSuchKey, client.exceptions.NoSuchBucket):
        return None


def _primary_object(seaweed, url: str) -> bytes:
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return seaweed.client().get_object(Bucket=bucket, Key=key)["Body"].read()


def test_every_announced_warc_is_in_the_primary_and_the_replica_with_its_sha1(s3_config, seaweed):
    config = _with_replica(s3_config, seaweed, seaweed.new_bucket())
    published = _harvest(config)
    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    assert [n for n in final["warnings"] if n["code"] == codes.REPLICA_LAG] == []
    warcs = [w["warc"] for w in published.warcs]
    assert len(warcs) > 1
    for warc in warcs:
        copy = _replica_object(seaweed, config, warc["path"])
        assert copy is not None, warc["path"]
        assert hashlib.sha1(copy).hexdigest() == warc["sha1"] == hashlib.sha1(
            _primary_object(seaweed, warc["path"])).hexdigest()


class _EveryPath(dict):
    """FakeServer routes answering every path with one function: a store that fails whatever is asked of it."""

    def __init__(self, answer) -> None:
        super().__init__()
        self.answer = answer

    def get(self, key, default=None):
        return self.answer


def test_a_failing_replica_is_tried_once_then_paused_and_the_harvest_is_not_held_up(s3_config, seaweed):
    """A replica answering 503 to everything, with the default retry count: the first WARC's copy gets one quick
    retry, later WARCs' copies are not tried while the replica is paused (harvesters/uploads.py REPLICA_PAUSE),
    each WARC is in the primary and named in a `replica_lag` warning (before: five retries per WARC)."""
    with FakeServer() as replica:
        replica.routes = _EveryPath(lambda request: Response(503, b"<Error><Code>SlowDown</Code></Error>",
                                                             content_type="application/xml"))
        config = dataclasses.replace(_with_replica(s3_config, seaweed, "copies"), storage_replica_endpoint=replica.url,
                                     http_retries=5, http_backoff=0.05)
        published = _harvest(config)
        tried = [r.path for r in replica.requests if r.method == "PUT"]
    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    warcs = [w["warc"] for w in published.warcs]
    assert len(warcs) > 1 and final["warcs"]["count"] == len(warcs)
    lag = [n["message"] for n in final["warnings"] if n["code"] == codes.REPLICA_LAG]
    assert len(lag) == len(warcs) and all(any(w["path"] in m for m in lag) for w in warcs), lag
    assert len(tried) == 2 and len(set(tried)) == 1, tried  # the first WARC: a try and a retry; then paused
    for warc in warcs:
        assert hashlib.sha1(_primary_object(seaweed, warc["path"])).hexdigest() == warc["sha1"]


def test_a_missing_replica_bucket_is_lag_the_harvest_succeeds_and_replicate_catches_up(s3_config, seaweed):
    missing = f"swath-{uuid.uuid4().hex[:12]}"  # never created: every copy is refused
    # SeaweedFS answers a copy into a missing bucket with a 500: a quick retry, then the replica pauses
    config = dataclasses.replace(_with_replica(s3_config, seaweed, missing), http_retries=1, http_backoff=0.05)
    published = _harvest(config)
    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    warcs = [w["warc"] for w in published.warcs]
    assert len(warcs) > 1 and final["warcs"]["count"] == len(warcs)
    lag = [n for n in final["warnings"] if n["code"] == codes.REPLICA_LAG]
    assert len(lag) == len(warcs)  # one per WARC, each announced all the same
    for warc in warcs:
        assert hashlib.sha1(_primary_object(seaweed, warc["path"])).hexdigest() == warc["sha1"]
        assert any(warc["path"] in n["message"] for n in lag)
    assert SECRET_KEY not in str(final)

    db = Store(url=config.db_url)
    try:
        with db.session() as s:  # what the monitor records of each warc_created
            for message in published.warcs:
                record_warc_created(s, WarcCreated.from_dict(message), data_root=config.data_root)
    finally:
        db.close()
    seaweed.client().create_bucket(Bucket=missing)  # the replica is back
    result = CliRunner().invoke(storage_cli, ["replicate"], obj=config, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    for warc in warcs:
        copy = _replica_object(seaweed, config, warc["path"])
        assert copy is not None and hashlib.sha1(copy).hexdigest() == warc["sha1"], warc["path"]
    assert CliRunner().invoke(storage_cli, ["verify"], obj=config, catch_exceptions=False).exit_code == 0
