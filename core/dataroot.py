"""The data root checked before a command writes under it: one coded line instead of a traceback later."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from swath.core.errors import SwathError

DATA_ROOT_UNWRITABLE = "data_root_unwritable"  # messages/codes.py holds it too; core sits below messages


class DataRootUnwritable(SwathError):
    """The data root cannot be made or written; the message names it, says why and what to do."""

    code = DATA_ROOT_UNWRITABLE


def cannot_write(folder: Path) -> str | None:
    """Why a file cannot be written in `folder` (made if missing; a probe file made and removed), or None if it can."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".swath-write-check-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        name = errno.errorcode.get(exc.errno or 0, "")
        return f"{why}{', ' + name if name else ''}"
    return None


def writable_data_root(root: Path) -> Path:
    """Make `root` if missing and prove a file can be written in it (made and removed); DataRootUnwritable if not."""
    if (why := cannot_write(root)) is not None:
        raise DataRootUnwritable(f"the data root {root} cannot be written ({why}): "
                                 "give a folder you may write with --data-root or SWATH_DATA_ROOT "
                                 "(`swath config` prints the one in use)")
    return root
