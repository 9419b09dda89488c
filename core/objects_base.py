"""The object stores' shared parts: their interface (`ObjectStore`), what they return (`ObjectInfo`),
their two errors and where a store is (`StorageTarget`). The stores: core/objects_local.py, core/objects_s3.py;
choosing one: core/objects.py `store_for`."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol
from urllib.parse import urlsplit

from swath.core.errors import SwathError

# messages/codes.py lists these; repeated here because core sits below messages (as core/errors.py does)
STORAGE_UNAVAILABLE = "storage_unavailable"
STORAGE_REFUSED = "storage_refused"
SHA1_METADATA = "sha1"  # the object's x-amz-meta-sha1: its SHA-1 in hex, as warc_created reports it
# x-amz-meta-fence-token: the fencing token of the runner that uploaded it (a PostgreSQL claim's), so which runner
# wrote an object can be told after the fact; the runner checks its token is still the newest before each upload
FENCE_METADATA = "fence-token"
_BLOCK = 1 << 20


class StorageError(SwathError):
    """The object store failed: one of the two below (`except StorageError` catches both)."""

    code = STORAGE_UNAVAILABLE


class StorageUnavailable(StorageError):
    """The store did not answer, timed out or failed on its side (5xx), after the retries."""

    code = STORAGE_UNAVAILABLE


class StorageRefused(StorageError):
    """The store refused the request (credentials, permissions, no such bucket): retrying cannot help."""

    code = STORAGE_REFUSED


@dataclass(frozen=True, kw_only=True)
class ObjectInfo:
    """One stored object: its key, where it is (`url`: an absolute path or s3://bucket/key), size and SHA-1
    (None when the store does not know it without reading the object: a local file, an S3 listing)."""

    key: str
    url: str
    size: int
    sha1: str | None = None


class RetryPlan(Protocol):
    """What the stores need of the shared retry policy (harvesters/retry.py `RetryPolicy` is one)."""

    @property
    def retries(self) -> int: ...

    def backoff_delay(self, failures: int, jitter: float) -> float: ...


class ObjectStore(Protocol):
    """The interface every part that stores or reads WARCs uses."""

    def url(self, key: str) -> str:
        """Where the object of `key` is (what warc_created's `path` says)."""
        ...

    def put_file(self, key: str, path: Path, *, sha1: str | None = None,
                 metadata: Mapping[str, str] | None = None) -> ObjectInfo:
        """Store the file at `path` as `key` and check it arrived whole (size and SHA-1); `sha1` when known;
        `metadata` kept beside it where the store has user metadata (S3: x-amz-meta-*)."""
        ...

    def head(self, key: str) -> ObjectInfo | None:
        """The object's size and SHA-1, or None when there is no such object."""
        ...

    def open_range(self, key: str, start: int, length: int | None = None) -> IO[bytes]:
        """A stream of the object's bytes from `start` (`length` of them; None: to the end). Close it."""
        ...

    def read_range(self, key: str, start: int, length: int) -> bytes:
        """Those bytes, read whole."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; no error when it is already gone."""
        ...

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object whose key starts with `prefix`, in key order."""
        ...


def file_sha1(path: Path) -> str:
    """The SHA-1 of a file in hex, read in blocks."""
    digest = hashlib.sha1()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True, kw_only=True)
class StorageTarget:
    """Where a store is: an s3://bucket/prefix URL, the S3 API's endpoint and the credentials to it."""

    url: str
    endpoint: str = ""
    access_key_id: str = field(default="", repr=False)
    secret_access_key: str = field(default="", repr=False)
    region: str = ""

    @property
    def bucket(self) -> str:
        return urlsplit(self.url).netloc

    @property
    def prefix(self) -> str:
        return urlsplit(self.url).path.strip("/")

    @property
    def secrets(self) -> list[str]:
        """The values every message about this store is cleaned of."""
        return [s for s in (self.access_key_id, self.secret_access_key) if s]


