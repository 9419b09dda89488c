"""core/objects.py: the local store and the S3 store against a real SeaweedFS (tests/seaweed.py), never a mock."""

from __future__ import annotations

import dataclasses
import hashlib
import math
import os

import pytest

from swath.core.config import Config
from swath.core.objects import (
    LocalStore,
    StorageRefused,
    StorageTarget,
    StorageUnavailable,
    store_for,
)
from swath.core.objects_s3 import S3Store
from swath.core.paths import PathOutsideDataRoot
from swath.harvesters.retry import RetryPolicy
from swath.messages import codes
from tests.seaweed import ACCESS_KEY, SECRET_KEY, free_ports

QUICK = RetryPolicy(retries=2, backoff=0.01)
MIB = 1024 * 1024


def _file(path, size, seed=b"swath"):
    """A file of `size` bytes that differ along its length (a ranged read at the wrong offset shows)."""
    block = hashlib.sha256(seed).digest() * (MIB // 32)
    with open(path, "wb") as fh:
        left = size
        while left:
            fh.write(block[:min(left, len(block))])
            left -= min(left, len(block))
    return path, path.read_bytes()


@pytest.fixture
def s3(s3_config):
    store = store_for(s3_config, retry=QUICK)
    assert isinstance(store, S3Store)
    return store


def test_put_head_range_list_delete_round_trip(s3, s3_config, tmp_path):
    path, data = _file(tmp_path / "a.warc.gz", 100_000)
    key = "collection_set/collection/2026/11/27/a.warc.gz"
    bucket = s3_config.storage_url.removeprefix("s3://").split("/")[0]
    info = s3.put_file(key, path)
    assert (info.key, info.size, info.sha1) == (key, len(data), hashlib.sha1(data).hexdigest())
    assert info.url == f"s3://{bucket}/archive/{key}" == s3.url(key)
    assert s3.head(key) == info  # the SHA-1 comes back from the object's metadata: no download
    assert s3.read_range(key, 1234, 5000) == data[1234:6234]
    with s3.open_range(key, 99_000) as body:
        assert body.read() == data[99_000:]
    other, _ = _file(tmp_path / "b.warc.gz", 10, seed=b"other")
    s3.put_file("collection_set/other/b.warc.gz", other)
    assert [o.key for o in s3.list("collection_set/collection/")] == [key]
    assert sorted(o.key for o in s3.list()) == sorted([key, "collection_set/other/b.warc.gz"])
    s3.delete(key)
    assert s3.head(key) is None
    s3.delete(key)  # gone already: no error


def test_a_large_file_goes_up_in_parts_with_checksums(s3_config, seaweed, tmp_path):
    store = S3Store(target=StorageTarget(url=s3_config.storage_url, endpoint=seaweed.endpoint,
                                         access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY),
                    retry=QUICK, multipart_threshold=5 * MIB, part_size=5 * MIB)
    path, data = _file(tmp_path / "big.warc.gz", 11 * MIB + 17)
    info = store.put_file("c/big.warc.gz", path)
    assert (info.size, info.sha1) == (len(data), hashlib.sha1(data).hexdigest())
    client = seaweed.client()
    bucket, _, prefix = s3_config.storage_url.removeprefix("s3://").partition("/")
    head = client.head_object(Bucket=bucket, Key=f"{prefix}/c/big.warc.gz", ChecksumMode="ENABLED")
    parts = math.ceil(len(data) / (5 * MIB))
    assert head["ETag"].strip('"').endswith(f"-{parts}")  # a multipart object of that many parts
    assert "ChecksumSHA256" in head  # the store kept (and checked) the SHA-256 sent with each part
    assert store.read_range("c/big.warc.gz", 6 * MIB - 3, 10) == data[6 * MIB - 3:6 * MIB + 7]


def test_the_store_refuses_bytes_that_do_not_match_their_checksum(seaweed, s3_config):
    """What put_file relies on: a part whose SHA-256 does not match is refused by the store (BadDigest)."""
    import base64

    from botocore.exceptions import ClientError

    bucket = s3_config.storage_url.removeprefix("s3://").split("/")[0]
    wrong = base64.b64encode(hashlib.sha256(b"other bytes").digest()).decode()
    with pytest.raises(ClientError) as caught:
        seaweed.client().put_object(Bucket=bucket, Key="x", Body=b"these bytes", ChecksumSHA256=wrong)
    assert caught.value.response["Error"]["Code"] == "BadDigest"


def test_refused_credentials_are_storage_refused_and_never_shown(s3_config, tmp_path):
    wrong = "not-the-secret-" + "9" * 20
    store = store_for(dataclasses.replace(s3_config, storage_secret_access_key=wrong), retry=QUICK)
    path, _ = _file(tmp_path / "a.warc.gz", 10)
    for attempt in (lambda: store.put_file("a.warc.gz", path), lambda: store.head("a.warc.gz"),
                    lambda: list(store.list())):
        with pytest.raises(StorageRefused) as caught:
            attempt()
        assert caught.value.code == codes.STORAGE_REFUSED
        assert wrong not in str(caught.value) and ACCESS_KEY not in str(caught.value)
        assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_missing_bucket_is_storage_refused(s3_config):
    """(Listed: SeaweedFS makes a bucket on a first put by its admin identity, as some stores do.)"""
    store = store_for(dataclasses.replace(s3_config, storage_url="s3://no-such-bucket-here/x"), retry=QUICK)
    with pytest.raises(StorageRefused) as caught:
        list(store.list())
    assert caught.value.status == 404


def test_a_store_that_does_not_answer_is_retried_then_storage_unavailable(config, tmp_path):
    (port,) = free_ports(1)  # nothing listens there
    waits: list[float] = []
    store = S3Store(target=StorageTarget(url="s3://bucket/p", endpoint=f"http://127.0.0.1:{port}",
                                         access_key_id="AKIDSECRETISH", secret_access_key="very-secret-value"),
                    retry=RetryPolicy(retries=3, backoff=0.5), timeout=5, sleep=waits.append)
    path, _ = _file(tmp_path / "a.warc.gz", 10)
    with pytest.raises(StorageUnavailable) as caught:
        store.put_file("a.warc.gz", path)
    assert caught.value.code == codes.STORAGE_UNAVAILABLE
    assert len(waits) == 3  # the shared policy's retries, with its growing back-off
    assert waits == sorted(waits) and waits[0] >= 0.5 * 0.8
    assert "very-secret-value" not in str(caught.value) and "AKIDSECRETISH" not in str(caught.value)
    with pytest.raises(StorageUnavailable):
        store.head("a.warc.gz")


def test_a_key_cannot_climb_out_of_the_prefix(s3):
    for key in ("../other/a.warc.gz", "a/../../b", "", "a//b"):
        with pytest.raises(StorageRefused):
            s3.url(key)


# --- the local filesystem: today's behaviour ---

def test_store_for_is_the_data_root_unless_a_storage_url_is_set(config, s3_config):
    local = store_for(config, retry=QUICK)
    assert isinstance(local, LocalStore) and local.root == config.harvest_base
    assert isinstance(store_for(s3_config, retry=QUICK), S3Store)
    with pytest.raises(StorageRefused):
        store_for(config, retry=QUICK, replica=True)


def test_local_store_keeps_a_file_in_place_and_copies_one_from_elsewhere(data_root, tmp_path):
    store = LocalStore(root=data_root)
    placed, data = _file(data_root / "set" / "coll" / "a.warc.gz", 5000) if (data_root / "set" / "coll").mkdir(
        parents=True) is None else (None, b"")
    inode = os.stat(placed).st_ino
    info = store.put_file("set/coll/a.warc.gz", placed)
    assert (info.url, info.size, info.sha1) == (str(placed), 5000, hashlib.sha1(data).hexdigest())
    assert os.stat(placed).st_ino == inode  # not copied
    elsewhere, other = _file(tmp_path / "b.warc.gz", 300, seed=b"b")
    assert store.put_file("set/coll/b.warc.gz", elsewhere).sha1 == hashlib.sha1(other).hexdigest()
    assert store.read_range("set/coll/b.warc.gz", 10, 20) == other[10:30]
    with store.open_range("set/coll/a.warc.gz", 4990) as fh:
        assert fh.read() == data[4990:]
    assert [o.key for o in store.list("set/")] == ["set/coll/a.warc.gz", "set/coll/b.warc.gz"]
    assert store.head("set/coll/b.warc.gz").size == 300
    store.delete("set/coll/b.warc.gz")
    assert store.head("set/coll/b.warc.gz") is None
    with pytest.raises(PathOutsideDataRoot):
        store.url("../outside")


# --- configuration ---

def test_storage_settings_from_the_environment():
    env = {"SWATH_STORAGE_URL": "s3://warcs/site-a/", "SWATH_STORAGE_ENDPOINT": "https://s3.example.org/",
           "SWATH_STORAGE_ACCESS_KEY_ID": "AKID", "SWATH_STORAGE_SECRET_ACCESS_KEY": "s3cr3t-value",
           "SWATH_STORAGE_REGION": "eu-1", "SWATH_STORAGE_REPLICA_URL": "s3://copies"}
    config = Config.from_env(env)
    assert (config.storage_url, config.storage_endpoint, config.storage_access_key_id,
            config.storage_secret_access_key, config.storage_region) == (
        "s3://warcs/site-a", "https://s3.example.org", "AKID", "s3cr3t-value", "eu-1")
    assert config.storage_replica_url == "s3://copies"
    assert "s3cr3t-value" not in repr(config) and "AKID" not in repr(config)
    assert Config.from_env({}).storage_url == ""


@pytest.mark.parametrize("name, value", [("SWATH_STORAGE_URL", "https://bucket/x"),
                                         ("SWATH_STORAGE_URL", "s3://Bad_Bucket"),
                                         ("SWATH_STORAGE_ENDPOINT", "ftp://host"),
                                         ("SWATH_STORAGE_REPLICA_URL", "/local/path")])
def test_malformed_storage_settings_stop_the_start(name, value):
    with pytest.raises(SystemExit) as caught:
        Config.from_env({name: value})
    assert name in str(caught.value)


def test_swath_config_shows_the_storage_keys_as_set_never_their_values():
    from swath.commands.config import effective

    shown = effective(Config.from_env({"SWATH_STORAGE_URL": "s3://warcs", "SWATH_STORAGE_ACCESS_KEY_ID": "AKID",
                                       "SWATH_STORAGE_SECRET_ACCESS_KEY": "s3cr3t-value"}))
    assert (shown["storage_url"], shown["storage_access_key_id"], shown["storage_secret_access_key"]) == (
        "s3://warcs", "***", "***")
    assert shown["storage_replica_secret_access_key"] == ""


def test_a_ranged_stream_cut_by_the_store_is_storage_unavailable(config, tmp_path):
    """The stream's own read errors are coded too: the volume server killed while a body is read."""
    from tests.seaweed import Seaweed

    seaweed = Seaweed.start(tmp_path / "seaweed")
    try:
        store = S3Store(target=StorageTarget(url=f"s3://{seaweed.new_bucket()}/p", endpoint=seaweed.endpoint,
                                             access_key_id=ACCESS_KEY, secret_access_key=SECRET_KEY),
                        retry=QUICK, timeout=5)
        path, data = _file(tmp_path / "big.warc.gz", 24 * MIB)
        store.put_file("big.warc.gz", path)
        with store.open_range("big.warc.gz", 0) as body:
            assert body.read(1000) == data[:1000]
            seaweed.stop()
            with pytest.raises(StorageUnavailable) as caught:
                while body.read(MIB):
                    pass
        assert SECRET_KEY not in str(caught.value)
    finally:
        seaweed.stop()
