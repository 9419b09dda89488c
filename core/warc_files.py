"""A WARC opened by its path, wherever it is kept: a local path is a local file; `s3://bucket/prefix/<key>` (what
warc_created says of a WARC in object storage) is read through ranged GETs (core/objects_ranged.py), and only
from the configured store: a URL naming another bucket or prefix is refused like a path outside the data root.

Which store that is, is set once per process (`use_storage`: an export, a WACZ; the reader processes get it from
`storage()` through their initializer, never through a file), so the readers keep taking plain path strings.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING
from urllib.parse import urlsplit

from swath.core.errors import SwathError
from swath.core.objects_base import ObjectStore, RetryPlan, StorageTarget
from swath.core.objects_ranged import RangedFile

if TYPE_CHECKING:
    from swath.core.config import Config

PATH_OUTSIDE_STORE = "path_outside_store"  # messages/codes.py lists it (core sits below messages)
SCHEME = "s3://"


class PathOutsideStore(SwathError, ValueError):
    """An s3:// WARC path that is not in the configured store's bucket and prefix."""

    code = PATH_OUTSIDE_STORE


@dataclass(frozen=True, kw_only=True)
class Storage:
    """Where this process reads s3:// WARCs from (picklable: handed to reader processes in memory)."""

    target: StorageTarget
    retry: RetryPlan
    timeout: float


_storage: Storage | None = None
_store: ObjectStore | None = None
_lock = threading.Lock()


def is_object_url(path: str | os.PathLike[str]) -> bool:
    return str(path).startswith(SCHEME)


def key_in(target: StorageTarget, url: str) -> str:
    """The key below the store's prefix that `url` names; PathOutsideStore when it is not in that store."""
    parts = urlsplit(url)
    full = parts.path.lstrip("/")
    prefix = f"{target.prefix}/" if target.prefix else ""
    key = full[len(prefix):] if full.startswith(prefix) else ""
    if (not url.startswith(SCHEME) or parts.netloc != target.bucket or not key
            or any(part in ("", ".", "..") for part in key.split("/"))):
        raise PathOutsideStore(f"{url} is not an object of the configured store {target.url} "
                               "(SWATH_STORAGE_URL); not read")
    return key


def use_storage(config: Config, *, retry: RetryPlan) -> None:
    """Read s3:// WARC paths from the store `config` names (none: such paths are refused)."""
    from swath.core.objects import storage_target

    target = storage_target(config)
    restore(Storage(target=target, retry=retry, timeout=config.http_timeout) if target else None)


def storage() -> Storage | None:
    return _storage


def restore(storage: Storage | None) -> None:
    """Take the settings `storage()` gave in another process (a reader process's initializer)."""
    global _storage, _store
    with _lock:
        if storage != _storage:
            _storage, _store = storage, None


def _object(url: str) -> tuple[ObjectStore, str]:
    global _store
    with _lock:
        settings = _storage
        if settings is None:
            raise PathOutsideStore(f"{url} is in object storage, but no store is configured (SWATH_STORAGE_URL)")
        key = key_in(settings.target, url)
        if _store is None:
            from swath.core.objects_s3 import S3Store  # boto3 loads only when an s3:// WARC is read

            _store = S3Store(target=settings.target, retry=settings.retry, timeout=settings.timeout)
        return _store, key


def open_warc(path: str | os.PathLike[str]) -> IO[bytes]:
    """The WARC at `path` open for reading (seekable); FileNotFoundError when there is none."""
    if not is_object_url(path):
        return open(path, "rb")  # noqa: SIM115 - the caller closes it
    store, key = _object(str(path))
    info = store.head(key)
    if info is None:
        raise FileNotFoundError(f"no object {path}")
    return RangedFile(store=store, key=key, size=info.size)  # type: ignore[return-value]


@dataclass(frozen=True)
class Stat:
    size: int
    mtime_ns: int  # 0 for an object: it never changes once stored


def stat_warc(path: str | os.PathLike[str]) -> Stat | None:
    """Size (and mtime) of the WARC at `path`; None when there is no such file or object."""
    if not is_object_url(path):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return Stat(st.st_size, st.st_mtime_ns) if Path(path).is_file() else None
    store, key = _object(str(path))
    info = store.head(key)
    return None if info is None else Stat(info.size, 0)


