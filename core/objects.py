"""Where WARCs are kept: one small interface, two stores (docs/configuration.md "Object storage").

- `LocalStore`: the data root's folder tree, today's behaviour and the default (SFM paths unchanged: a key is the
  path relative to the data root, and an object's url is its absolute path).
- `S3Store` (core/objects_s3.py, boto3 imported on first use): S3-compatible object storage (AWS S3, Ceph RGW,
  SeaweedFS, MinIO), chosen by `SWATH_STORAGE_URL=s3://bucket/prefix`; a key maps 1:1 below the prefix.

Every object carries its SHA-1 (S3: in the object's metadata), so a check needs a HEAD, never a download.
Failures are `StorageUnavailable` (connection errors, timeouts, 5xx: retried first) or `StorageRefused`
(credentials, permissions, a missing bucket: asking again cannot help); neither ever shows a credential.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from swath.core.objects_base import (
    SHA1_METADATA,
    STORAGE_REFUSED,
    STORAGE_UNAVAILABLE,
    ObjectInfo,
    ObjectStore,
    RetryPlan,
    StorageError,
    StorageRefused,
    StorageTarget,
    StorageUnavailable,
    file_sha1,
)
from swath.core.objects_local import LocalStore

if TYPE_CHECKING:
    from swath.core.config import Config

__all__ = ["SHA1_METADATA", "STORAGE_REFUSED", "STORAGE_UNAVAILABLE", "LocalStore", "ObjectInfo", "ObjectStore",
           "RetryPlan", "StorageError", "StorageRefused", "StorageTarget", "StorageUnavailable", "file_sha1",
           "storage_target", "store_for"]


def storage_target(config: Config, *, replica: bool = False) -> StorageTarget | None:
    """The primary (or the replica) store's settings; None when it is the local filesystem (no URL set)."""
    if replica:
        if not config.storage_replica_url:
            return None
        return StorageTarget(url=config.storage_replica_url, endpoint=config.storage_replica_endpoint,
                             access_key_id=config.storage_replica_access_key_id,
                             secret_access_key=config.storage_replica_secret_access_key,
                             region=config.storage_replica_region)
    if not config.storage_url:
        return None
    return StorageTarget(url=config.storage_url, endpoint=config.storage_endpoint,
                         access_key_id=config.storage_access_key_id,
                         secret_access_key=config.storage_secret_access_key, region=config.storage_region)


def store_for(config: Config, *, retry: RetryPlan, replica: bool = False) -> ObjectStore:
    """The configured store: S3 when SWATH_STORAGE_URL (or the replica's URL) is set, else the data root.
    `retry`: the shared policy (`harvesters.retry.RetryPolicy`) for connection errors and 5xx."""
    target = storage_target(config, replica=replica)
    if target is None:
        if replica:
            raise StorageRefused("no replica store is configured (SWATH_STORAGE_REPLICA_URL)")
        return LocalStore(root=config.harvest_base)
    from swath.core.objects_s3 import S3Store  # boto3 loads only when S3 is used

    return S3Store(target=target, retry=retry, timeout=config.http_timeout)
