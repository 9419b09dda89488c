"""An SFM WARC checked against sfm-ui's row before `swath sfm import` indexes it: the file its path names lies
in the harvest root, is a regular file, and has the size and sha1 sfm-ui recorded. What fails is reported."""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass

from swath.core.config import Config
from swath.core.paths import PathOutsideDataRoot, harvest_path
from swath.messages import codes
from swath.sfm_import import SfmWarc
from swath.store.warc_index import MAX_PATH

_CHUNK = 1 << 20
MAX_WARC_ID = 100  # the WARC index's id column (store/models.py Warc.id)


@dataclass(frozen=True)
class WarcProblem:
    warc_id: str
    path: str
    code: str
    message: str


def check_warc(config: Config, warc: SfmWarc) -> WarcProblem | None:
    """None when the file is the WARC sfm-ui recorded; else what is wrong with it."""
    def problem(code: str, message: str) -> WarcProblem:
        return WarcProblem(warc.warc_id, warc.path, code, message)

    if len(warc.warc_id) > MAX_WARC_ID or len(warc.path) > MAX_PATH:
        return problem(codes.BAD_REQUEST, f"WARC {warc.warc_id[:40]!r}: its id or path is too long for the WARC index")
    try:
        real = harvest_path(config, warc.path)
    except PathOutsideDataRoot as exc:
        return problem(exc.code, exc.message)
    try:
        # the path was resolved: a link planted since is refused; a FIFO opens without waiting for a writer
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        return problem(codes.SFM_WARC_MISSING, f"{warc.path} cannot be read ({exc.strerror})")
    info = os.fstat(fd)  # the file opened, not whatever the path names a moment later
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return problem(codes.SFM_WARC_MISSING, f"{warc.path} is not a file")
    with os.fdopen(fd, "rb") as fh:
        if info.st_size != warc.bytes:
            return problem(codes.SFM_WARC_MISMATCH,
                           f"{warc.path} is {info.st_size} bytes; sfm-ui recorded {warc.bytes}")
        digest = hashlib.sha1()
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    if digest.hexdigest() != warc.sha1:
        return problem(codes.SFM_WARC_MISMATCH,
                       f"{warc.path} has sha1 {digest.hexdigest()}; sfm-ui recorded {warc.sha1}")
    return None
