"""Several worker "hosts" on one bucket (tests/test_object_storage_faults.py, test_object_storage_fencing.py): each
host its own data root (its staging folder) with SWATH_STORAGE_URL=s3://... on a real SeaweedFS (tests/seaweed.py),
claims and state in a fresh PostgreSQL database; and the read-back every such test shares, from the bucket itself:
every object announced in warc_created is in the bucket with that size and SHA-1 (and nothing else is), each WARC
id is announced with one content only, and no WARC is left in a staging folder. The bucket's objects and the
claims' fencing tokens are read here for tests/reliability/test_pg_claims.py too. No tests here."""

from __future__ import annotations

import collections
import dataclasses
import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text

from swath.core.config import Config
from swath.core.objects_base import FENCE_METADATA
from tests.fakes.tumblr import API_KEY
from tests.reliability.kit import Collector, WorkerProcess, items_in_warcs, worker_env
from tests.requesterkit import fresh_database
from tests.seaweed import ACCESS_KEY, SECRET_KEY, Seaweed

WAIT = 240.0  # seconds: only a guard against a hang on a busy shared machine
UPLOADING = "uploading "  # harvesters/uploads.py logs it as each upload begins


def bucket_objects(client: Any, url: str) -> dict[str, tuple[bytes, dict[str, str]]]:
    """Every object under `url` (s3://bucket/prefix), read with the S3 `client`: its bytes and user metadata, by its
    s3:// URL."""
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    out = {}
    for item in client.list_objects_v2(Bucket=bucket, Prefix=prefix).get("Contents", []):
        got = client.get_object(Bucket=bucket, Key=item["Key"])
        out[f"s3://{bucket}/{item['Key']}"] = (got["Body"].read(), got.get("Metadata") or {})
    return out


def as_files(blobs: Iterable[bytes], folder: Path) -> list[Path]:
    """Each blob written to folder/N.warc.gz (N counting on from the files there), to read them back as WARCs."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for blob in blobs:
        paths.append(folder / f"{len(list(folder.iterdir()))}.warc.gz")
        paths[-1].write_bytes(blob)
    return paths


def claim_tokens(db_url: str, ids: list[str]) -> dict[str, int]:
    """The fencing token of each harvest's claim in the store (1: claimed once; one more per later claim)."""
    engine = create_engine(db_url)
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT harvest_id, token FROM harvest_claims WHERE harvest_id = ANY(:ids)"),
                            {"ids": ids}).all()
    engine.dispose()
    return {harvest_id: int(token) for harvest_id, token in rows}


@dataclasses.dataclass
class Site:
    """The shared services of one test: the bucket's URL and its store, the PostgreSQL store's URL."""

    config: Config
    seaweed: Seaweed
    bucket: str
    db_url: str

    @property
    def storage_url(self) -> str:
        return f"s3://{self.bucket}/archive"

    def host_config(self, data_root: Path, **changes: Any) -> Config:
        """The config of a host whose data root (staging folder) is `data_root`, on this bucket and store."""
        return dataclasses.replace(self.config, data_root=data_root, db_url=self.db_url, storage_url=self.storage_url,
                                   storage_endpoint=self.seaweed.endpoint, storage_access_key_id=ACCESS_KEY,
                                   storage_secret_access_key=SECRET_KEY, **changes)

    def host(self, tmp_path: Path, n: int, names: tuple[str, ...], **env: str) -> list[WorkerProcess]:
        """The workers of host `n`: its own data root (the staging folder), the recipe's environment."""
        root = tmp_path / f"host{n}"
        (root / "data").mkdir(parents=True, exist_ok=True)
        config = self.host_config(root / "data")
        return [WorkerProcess(config=config, name=name, log_dir=root, env=worker_env(config, **env))
                for name in names]

    def objects(self) -> dict[str, tuple[bytes, dict[str, str]]]:
        """Every object under the prefix: its bytes and user metadata, by its s3:// URL."""
        return bucket_objects(self.seaweed.client(), self.storage_url + "/")


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A PostgreSQL database of this test's own, dropped after it (named as requesterkit's: tests/tiers.py knows it)."""
    with fresh_database() as url:
        yield url


@pytest.fixture
def site(config: Config, seaweed: Seaweed, pg_url: str) -> Site:
    return Site(config=config, seaweed=seaweed, bucket=seaweed.new_bucket(), db_url=pg_url)


def read_back(site: Site, tmp_path: Path, collected: Collector) -> dict[str, list[str]]:
    """The checks every test shares (module docstring); the items found in the bucket, by kind."""
    objects = site.objects()
    announced: dict[str, set[tuple[str, int, str]]] = collections.defaultdict(set)
    for body in collected.warcs():
        warc = body["warc"]
        announced[body["warc"]["id"]].add((warc["path"], warc["bytes"], warc["sha1"]))
    assert all(len(v) == 1 for v in announced.values()), {k: v for k, v in announced.items() if len(v) > 1}
    paths = {path: (size, sha1) for ((path, size, sha1),) in announced.values()}
    assert set(paths) == set(objects), "announced and stored WARCs differ"
    for url, (data, metadata) in objects.items():
        assert (len(data), hashlib.sha1(data).hexdigest()) == paths[url], url
        assert metadata["sha1"] == paths[url][1] and int(metadata[FENCE_METADATA]) >= 1, (url, metadata)
    files = as_files((data for data, _ in objects.values()), tmp_path / "bucket")
    for host in sorted(tmp_path.glob("host*/data")):  # staging folders hold nothing once uploaded
        left = [p for p in host.rglob("*") if p.is_file() and ".warc" in p.name]
        assert left == [], left
    return items_in_warcs(files)


def tumblr_start(host: str, harvest_id: str, n: int) -> tuple[str, dict[str, Any]]:
    return "harvest.start.tumblr.tumblr_blog_posts", {
        "id": harvest_id, "type": "tumblr_blog_posts", "path": f"collections/s3/tumblr-{n}",
        "seeds": [{"id": f"seed-{host}", "uid": host}], "credentials": {"api_key": API_KEY},
        "collection_set": {"id": "s3"}, "collection": {"id": f"tumblr-{n}"}}


def stop_all(workers: list[WorkerProcess]) -> list[int | None]:
    return [w.stop() for w in workers]
