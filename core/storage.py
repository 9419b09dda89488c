"""Storage faults: a write the disk refused (full, read-only, failing) becomes one `StorageFault` with a code,
the path and the free space, where the write happens; and the free-space guard (`SWATH_MIN_FREE_BYTES`).

Harvests and exports catch it to stop writing, keep what is complete and say what happened in their status;
the next run resumes (docs/reliability.md, "Storage faults").
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from swath.core.errors import SwathError

# messages/codes.py lists these; they are repeated here because core sits below messages (as errors.py does)
DISK_FULL = "disk_full"
DATA_ROOT_UNWRITABLE = "data_root_unwritable"
IO_ERROR = "io_error"
FREE_SPACE_LOW = "free_space_low"
STORAGE_CODES = frozenset({DISK_FULL, DATA_ROOT_UNWRITABLE, IO_ERROR, FREE_SPACE_LOW})

_BY_ERRNO = {
    errno.ENOSPC: DISK_FULL,
    errno.EDQUOT: DISK_FULL,
    errno.EROFS: DATA_ROOT_UNWRITABLE,
    errno.EACCES: DATA_ROOT_UNWRITABLE,
    errno.EIO: IO_ERROR,
}


class StorageFault(SwathError):
    """The disk under the data root refused a write; `path` is what was being written."""

    code = IO_ERROR

    def __init__(self, message: str, *, code: str | None = None, path: Path | None = None) -> None:
        super().__init__(message, code=code)
        self.path = path


def free_bytes(path: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the filesystem holding `path` (its nearest existing
    ancestor); None when not even that can be asked."""
    for candidate in (path, *path.parents):
        try:
            st = os.statvfs(candidate)
        except FileNotFoundError:
            continue
        except OSError:
            return None
        return st.f_bavail * st.f_frsize
    return None


def describe_free(path: Path) -> str:
    free = free_bytes(path)
    return "free space unknown" if free is None else f"{free} bytes free"


def storage_fault(exc: BaseException, path: Path) -> StorageFault | None:
    """The StorageFault an OSError stands for (ENOSPC, EDQUOT, EROFS, EACCES, EIO), else None.
    A StorageFault is returned as it is, wherever it is found in the chain of causes."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, StorageFault):
            return seen
        if isinstance(seen, OSError) and seen.errno in _BY_ERRNO:
            where = Path(seen.filename) if isinstance(seen.filename, str) else path
            reason = os.strerror(seen.errno) if seen.errno is not None else str(seen)
            return StorageFault(f"writing {where} failed: {reason} ({describe_free(where)})",
                                code=_BY_ERRNO[seen.errno], path=where)
        seen = seen.__cause__ or seen.__context__
    return None


@contextmanager
def storage_writes(path: Path) -> Iterator[None]:
    """Around a write under `path`: a storage fault leaves as a StorageFault, anything else as it was."""
    try:
        yield
    except OSError as exc:
        fault = storage_fault(exc, path)
        if fault is None:
            raise
        raise fault from exc


def below_minimum(free: int | None, minimum: int) -> bool:
    """Whether `free` bytes (None: unknown) is under SWATH_MIN_FREE_BYTES (0: no minimum)."""
    return minimum > 0 and free is not None and free < minimum


def check_free_space(path: Path, minimum: int, *, what: str) -> None:
    """Refuse to start (or go on) writing under `path` with less than `minimum` bytes free (SWATH_MIN_FREE_BYTES)."""
    free = free_bytes(path)
    if below_minimum(free, minimum):
        raise StorageFault(f"{what}: {path} has {free} bytes free, below SWATH_MIN_FREE_BYTES={minimum}; "
                           "free some space and run it again", code=FREE_SPACE_LOW, path=path)


class Ballast:
    """Space set aside while a harvest runs and given back when the disk fills, so the few small files that
    say what happened (the final-status record) still fit. Laying it is best effort: a disk too full for it
    fails later, at a write that says so."""

    SIZE = 16 * 1024  # a final-status record is a few KB

    def __init__(self, path: Path) -> None:
        self.path = path

    def lay(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "wb") as fh:
                fh.write(b"\0" * self.SIZE)  # written, not truncated to size: a sparse file sets nothing aside
        except OSError:
            self.release()

    def release(self) -> None:
        try:
            self.path.unlink(missing_ok=True)
        except OSError:
            pass  # a read-only disk: nothing to give back anyway
