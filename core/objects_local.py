"""The local filesystem as an object store: today's behaviour and the default (core/objects.py)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from swath.core.objects_base import ObjectInfo, file_sha1
from swath.core.paths import resolve_inside


@dataclass(frozen=True, kw_only=True)
class LocalStore:
    """Objects as files under `root`: a key is a relative path (never out of the root), its url the absolute
    path. Storing a file that is already in place (a WARC the harvest wrote there) copies nothing."""

    root: Path

    def _path(self, key: str) -> Path:
        return resolve_inside(self.root, key)

    def url(self, key: str) -> str:
        return str(self._path(key))

    def put_file(self, key: str, path: Path, *, sha1: str | None = None,
                 metadata: Mapping[str, str] | None = None) -> ObjectInfo:
        # no metadata on a plain file: a shared filesystem's claim is a flock, which needs no token beside it
        target = self._path(key)
        if target != path.resolve():
            target.parent.mkdir(parents=True, exist_ok=True)
            part = target.with_name(target.name + ".part")
            shutil.copyfile(path, part)
            os.replace(part, target)  # whole or not at all under its name
        return ObjectInfo(key=key, url=str(target), size=target.stat().st_size, sha1=sha1 or file_sha1(target))

    def head(self, key: str) -> ObjectInfo | None:
        target = self._path(key)
        if not target.is_file():
            return None
        return ObjectInfo(key=key, url=str(target), size=target.stat().st_size)

    def open_range(self, key: str, start: int, length: int | None = None) -> IO[bytes]:
        fh = open(self._path(key), "rb")  # noqa: SIM115 - the caller closes it
        fh.seek(start)
        if length is None:
            return fh
        return _Bounded(fh, length)  # type: ignore[return-value]

    def read_range(self, key: str, start: int, length: int) -> bytes:
        with self.open_range(key, start, length) as fh:
            return fh.read()

    def delete(self, key: str) -> None:
        self._path(key).unlink(missing_ok=True)

    def list(self, prefix: str = "") -> Iterator[ObjectInfo]:
        base = self.root.resolve()
        found = sorted(p for p in base.rglob("*") if p.is_file() and not p.is_symlink())
        for path in found:
            key = path.relative_to(base).as_posix()
            if key.startswith(prefix):
                yield ObjectInfo(key=key, url=str(path), size=path.stat().st_size)


class _Bounded:
    """A file read up to `length` bytes from where it stands (a local ranged read)."""

    def __init__(self, fh: IO[bytes], length: int) -> None:
        self._fh, self._left = fh, length

    def read(self, size: int = -1) -> bytes:
        size = self._left if size is None or size < 0 else min(size, self._left)
        data = self._fh.read(size)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> _Bounded:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
