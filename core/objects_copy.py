"""One object copied from a store to another (a replica) and checked there: size and SHA-1, as the WARC index
records them. Same S3 endpoint: a server-side copy (no byte crosses this machine; the object's metadata, its
SHA-1, goes with it). Otherwise the bytes stream from the source to the target, hashed on the way, and a copy
whose SHA-1 is not the expected one is removed again. A local source file is hashed before it is sent."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from swath.core.errors import SwathError
from swath.core.objects_base import SHA1_METADATA, ObjectInfo, ObjectStore, RetryPlan, StorageRefused, file_sha1
from swath.core.objects_local import LocalStore

if TYPE_CHECKING:
    from swath.core.config import Config

OBJECT_DIFFERS = "object_differs"  # messages/codes.py lists it (core sits below messages)


class ObjectDiffers(SwathError):
    """An object is not the WARC the index records (other size or SHA-1): never copied on, never passed."""

    code = OBJECT_DIFFERS


def copy_to_replica(config: Config, info: ObjectInfo, *, sha1: str, retry: RetryPlan) -> ObjectInfo | None:
    """What the upload path calls once an upload is verified (`info`: what put_file returned): the object copied
    to the replica store and checked there; None when no replica is configured (SWATH_STORAGE_REPLICA_URL).
    Raises StorageUnavailable/StorageRefused (the replica failed: the WARC is safe in the primary, so a caller
    goes on and `swath storage replicate` copies it later) or ObjectDiffers."""
    from swath.core.objects import store_for

    if not config.storage_replica_url:
        return None
    return copy_object(store_for(config, retry=retry), store_for(config, retry=retry, replica=True), info.key,
                       size=info.size, sha1=sha1)


def copy_object(source: ObjectStore, target: ObjectStore, key: str, *, size: int, sha1: str) -> ObjectInfo:
    """Copy `key` from `source` to `target` and check the copy has `size` bytes and SHA-1 `sha1`."""
    from swath.core.objects_s3 import S3Store  # imported only here: a local source needs no boto3 client

    if isinstance(source, LocalStore):
        path = Path(source.url(key))
        found = file_sha1(path) if path.is_file() else None
        if found != sha1:
            raise ObjectDiffers(f"{path} is {'missing' if found is None else f'sha1 {found}'}, the index says "
                                f"sha1 {sha1}; not copied to {target.url(key)}")
        info = target.put_file(key, path, sha1=sha1)
    elif isinstance(source, S3Store) and isinstance(target, S3Store):
        have = source.head(key)
        if have is None or have.size != size or (have.sha1 is not None and have.sha1 != sha1):
            raise ObjectDiffers(f"{source.url(key)} is {_said(have)}, the index says {size} bytes, sha1 {sha1}; "
                                f"not copied to {target.url(key)}")
        if source.target.endpoint == target.target.endpoint:
            _server_side(source, target, key, sha1)
        else:
            _streamed(source, target, key, sha1)
        info = target.head(key) or ObjectInfo(key=key, url=target.url(key), size=-1)
    else:
        raise StorageRefused(f"cannot copy {source.url(key)} to {target.url(key)}: a replica is an S3 store")
    if info.size != size or info.sha1 != sha1:
        raise ObjectDiffers(f"the copy {target.url(key)} is {_said(info)}, not {size} bytes, sha1 {sha1}")
    return info


def _said(info: ObjectInfo | None) -> str:
    return "missing" if info is None else f"{info.size} bytes, sha1 {info.sha1 or 'unknown'}"


def _server_side(source: Any, target: Any, key: str, sha1: str) -> None:
    """S3's CopyObject within one endpoint; the SHA-1 set again so the copy carries it even if the source's was lost."""
    def copy() -> None:
        target._client().copy_object(
            Bucket=target.target.bucket, Key=target._key(key),
            CopySource={"Bucket": source.target.bucket, "Key": source._key(key)},
            MetadataDirective="REPLACE", Metadata={SHA1_METADATA: sha1}, ContentType="application/warc")

    target._call(f"COPY {source.url(key)} to {target.url(key)}", copy)


class _Hashing:
    """A stream that hashes what is read through it (the bytes that went up, checked after)."""

    def __init__(self, body: IO[bytes]) -> None:
        self.body, self.digest = body, hashlib.sha1()

    def read(self, size: int = -1) -> bytes:
        data = self.body.read(size)
        self.digest.update(data)
        return data


def _streamed(source: Any, target: Any, key: str, sha1: str) -> None:
    """GET from the source, PUT to the target (multipart when large, each part's SHA-256 checked by the target)."""
    from boto3.s3.transfer import TransferConfig

    def upload() -> None:
        with source.open_range(key, 0) as body:
            hashing = _Hashing(body)
            config = TransferConfig(multipart_threshold=target.multipart_threshold,
                                    multipart_chunksize=target.part_size, max_concurrency=1, num_download_attempts=1)
            target._client().upload_fileobj(hashing, target.target.bucket, target._key(key), Config=config,
                                            ExtraArgs={"ChecksumAlgorithm": "SHA256", "Metadata": {SHA1_METADATA: sha1},
                                                       "ContentType": "application/warc"})
        if hashing.digest.hexdigest() != sha1:
            target.delete(key)  # never leave a copy that is not the WARC
            raise ObjectDiffers(f"{source.url(key)} read as sha1 {hashing.digest.hexdigest()}, the index says "
                                f"{sha1}; the copy at {target.url(key)} was removed")

    target._call(f"copy {source.url(key)} to {target.url(key)}", upload)
