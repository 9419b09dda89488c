"""Resolve paths named in messages, refusing anything outside the data root; create and replace files without
ever following a link (create_new is the one way a file swath writes is created)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from swath.core.config import Config
from swath.core.errors import SwathError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
# how every file swath writes is created: never an existing file, never through a link (docs/security.md)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_ROOT_NAMES = {"SWATH_HARVEST_ROOT": "harvest root", "SWATH_EXPORT_ROOT": "export root"}  # what refusals call them


class PathOutsideDataRoot(SwathError, ValueError):
    """A message named a path that does not resolve inside the data root."""

    code = "path_outside_data_root"  # messages.codes.PATH_OUTSIDE_DATA_ROOT (core sits below messages)


def resolve_inside(data_root: Path, path: str | os.PathLike[str], *, setting: str = "SWATH_DATA_ROOT") -> Path:
    """Return the real path of `path` (absolute, or relative to the data root) if it is inside the root.

    Symlinks are followed for the part that exists, so a link pointing out of the root is refused.
    `setting`: the variable that sets this root, named in the refusal.
    """
    root = Path(os.path.realpath(data_root))
    raw = Path(path)
    if "\x00" in str(path):
        raise PathOutsideDataRoot("path contains a NUL byte")
    candidate = raw if raw.is_absolute() else root / raw
    real = Path(os.path.realpath(candidate))
    if real != root and root not in real.parents:
        raise PathOutsideDataRoot(
            f"path {str(path)!r} resolves to {str(real)!r}, outside the {_ROOT_NAMES.get(setting, 'data root')} "
            f"{str(root)!r}; "
            f"use a path under {setting}"
        )
    return real


def harvest_path(config: Config, path: str | os.PathLike[str]) -> Path:
    """A harvest's `path`, inside the harvest root (SWATH_HARVEST_ROOT, else the data root)."""
    setting = "SWATH_HARVEST_ROOT" if config.harvest_root else "SWATH_DATA_ROOT"
    return resolve_inside(config.harvest_base, path, setting=setting)


def export_path(config: Config, path: str | os.PathLike[str]) -> Path:
    """An export's `path`, inside the export root (SWATH_EXPORT_ROOT, else the data root)."""
    setting = "SWATH_EXPORT_ROOT" if config.export_root else "SWATH_DATA_ROOT"
    return resolve_inside(config.export_base, path, setting=setting)


def make_dirs_inside(root: Path, path: Path) -> Path:
    """mkdir -p `path` (below `root`, itself resolved) and check it did not lead out of `root` through a
    symlink planted on the way; raises PathOutsideDataRoot, having created nothing outside."""
    root.mkdir(parents=True, exist_ok=True)  # the root itself was checked by resolve_inside
    real_root = Path(os.path.realpath(root))
    current = real_root
    for part in path.relative_to(root).parts:
        current = current / part
        if current.is_symlink() and real_root not in Path(os.path.realpath(current)).parents:
            raise PathOutsideDataRoot(f"{str(current)!r} is a symlink leading out of {str(real_root)!r}; "
                                      "remove it")
        current.mkdir(exist_ok=True)
    return current


def read_inside(root: Path, path: Path) -> bytes:
    """The bytes of the file `path`, refused (PathOutsideDataRoot) when its real path is outside `root`:
    a symlink planted among files we read must not make us read what lies outside."""
    real = resolve_inside(root, path)
    try:  # the resolved path has no link left; one planted since the check is refused, not followed
        with open_no_follow(real) as fh:
            return fh.read()
    except PathOutsideDataRoot:
        raise PathOutsideDataRoot(f"{str(path)!r} became a symlink while being read; skipped") from None


def stays_inside(root: Path, path: Path) -> bool:
    """Whether `path`, links followed, is inside `root`: a folder scan that feeds an output (a WACZ, an export,
    a harvest's WARC list) skips or refuses the files for which this is False."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _refuse_link(path: Path, what: str) -> PathOutsideDataRoot:
    return PathOutsideDataRoot(f"{str(path)!r} is a symlink; {what} (remove the link)")


def create_new(path: Path, *, replace: bool = False, buffering: int = -1) -> BinaryIO:
    """The one way swath creates a file it writes: O_CREAT|O_EXCL|O_NOFOLLOW, so an existing file or a planted
    link in its place is never opened, let alone written through (PathOutsideDataRoot for a link, else
    FileExistsError). `replace` first removes what holds the name (a stale temp file, or the link itself: its
    target is left alone); a link planted again in between is still refused."""
    if replace:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    try:
        fd = os.open(path, _CREATE, 0o644)
    except FileExistsError:
        if os.path.islink(path):
            raise _refuse_link(path, "not written through") from None
        raise
    return os.fdopen(fd, "wb", buffering=buffering)


def open_no_follow(path: Path, *, write: bool = False) -> BinaryIO:
    """An existing file for reading (or, `write`, updating in place), refused (PathOutsideDataRoot) when `path` is
    a symlink or not a regular file: a leftover swath means to repair must be its own file, not a link planted in
    its place, nor a FIFO (whose reads would wait for ever for a writer) or a device."""
    try:
        # O_NONBLOCK: opening a FIFO for reading would wait for a writer; a regular file reads as usual with it
        fd = os.open(path, (os.O_RDWR if write else os.O_RDONLY) | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        if os.path.islink(path):
            raise _refuse_link(path, "not opened") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathOutsideDataRoot(f"{path} is not a regular file (a FIFO or device planted there?); not opened")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "r+b" if write else "rb")


def read_no_follow(path: Path) -> bytes:
    """The whole of a file swath wrote and reads back (a cache, a record of its own), through `open_no_follow`:
    FileNotFoundError, or PathOutsideDataRoot (a ValueError) for a link, FIFO or device planted in its place."""
    with open_no_follow(path) as fh:
        return fh.read()


def open_lock(path: Path) -> int:
    """The descriptor of a lock file (created if missing) for flock, never through a planted link."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError:
        if os.path.islink(path):
            raise _refuse_link(path, "not used as a lock") from None
        raise


def fsync_dir(directory: Path) -> None:
    """Make a rename in `directory` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_file(path: Path, *, durable: bool = False, buffering: int = -1) -> Iterator[BinaryIO]:
    """A file written under a fresh temp name beside `path` (create_new) and renamed over `path` when the block
    ends without error, removed otherwise: readers see the old or the new file, never half of one, and a link
    planted at `path` is replaced by the rename, not followed. `durable`: fsync the file and the folder.
    Check the folder first (make_dirs_inside)."""
    temp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    try:
        with create_new(temp, buffering=buffering) as fh:
            yield fh
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    if durable:
        fsync_dir(path.parent)


def write_atomic(path: Path, data: bytes, *, durable: bool = False) -> None:
    """`data` as the whole of `path`, through atomic_file."""
    with atomic_file(path, durable=durable) as fh:
        fh.write(data)


@contextlib.contextmanager
def staged_path(path: Path) -> Iterator[Path]:
    """For a tool that opens its output by name (the wacz package): a name inside a fresh private folder beside
    `path` (mkdtemp: made exclusively, mode 0700, so nobody can plant a link in it), renamed over `path` when the
    block ends without error; the folder is removed either way."""
    folder = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part"))
    try:
        staged = folder / path.name
        yield staged
        os.replace(staged, path)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def append_no_follow(path: Path, data: bytes) -> None:
    """Append to `path` (created if missing), refusing a symlink in its place rather than writing through it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        if os.path.islink(path):
            raise _refuse_link(path, "not written through") from None
        raise
    with os.fdopen(fd, "ab") as fh:
        fh.write(data)


def safe_id(message_id: str) -> str:
    """A file-name-safe form of an id from a message (harvest or export id): no separator, no leading dot,
    so never `..` or an absolute path; ids that needed changing get a hash so they stay distinct."""
    cleaned = _UNSAFE.sub("_", message_id)[:80]
    if cleaned == message_id and not cleaned.startswith("."):
        return cleaned
    return f"{cleaned.lstrip('.') or 'h'}~{hashlib.sha1(message_id.encode('utf-8')).hexdigest()[:10]}"
