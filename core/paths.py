"""Resolve paths named in messages, refusing anything outside the data root."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from pathlib import Path

from swath.core.config import Config
from swath.core.errors import SwathError

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
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
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        if os.path.islink(real):
            raise PathOutsideDataRoot(f"{str(path)!r} became a symlink while being read; skipped") from None
        raise
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def write_atomic(path: Path, data: bytes) -> None:
    """Write `path` so a reader sees the old or the new file, never half of one, and never write through a
    link: the temp file is created exclusively (O_EXCL does not follow links) and renamed over the name
    (a rename replaces a symlink, it does not follow it). Check the folder first (make_dirs_inside)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # as a plain open would under the usual umask (mkstemp makes 0600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def append_no_follow(path: Path, data: bytes) -> None:
    """Append to `path` (created if missing), refusing a symlink in its place rather than writing through it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    except OSError:
        if os.path.islink(path):
            raise PathOutsideDataRoot(f"{str(path)!r} is a symlink; not written through") from None
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
