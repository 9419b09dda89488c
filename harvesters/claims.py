"""One runner per harvest: an exclusive lock per harvest id, held by the process running it.

The claim is `flock(LOCK_EX)` on `<data root>/.swath/claims/<id>.lock`. The kernel drops it when its
holder dies (kill -9 included), so a claim is taken over exactly when its holder is provably gone,
with no lease to expire or clock to trust. Every replica that can resume a harvest shares the data
root (its WARCs are there), so the lock lives where the harvest's files live. See docs/reliability.md.

The holder removes the file when it releases the claim; a waiter that locked a file already removed
(its inode no longer at the path) tries again, so removal never lets two holders in.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
from pathlib import Path
from typing import Protocol

from swath.core.errors import SwathError
from swath.core.paths import make_dirs_inside, open_lock, read_no_follow, safe_id
from swath.messages import codes

POLL = 0.2  # seconds between tries while another process holds the claim


class ClaimLost(RuntimeError):
    """The claim file was removed or replaced under its holder: another process may hold it now."""


class ClaimFenced(SwathError, ClaimLost):
    """A newer runner of the harvest took its claim since this one did (its fencing token is higher): what
    this runner would upload or commit now is refused. A ClaimLost, so the run ends as one (no final status)."""

    code = codes.CLAIM_FENCED


class Claim(Protocol):
    """The right to run one harvest id, wherever it is kept: `HarvestClaim` (flock, the default) or the
    store's advisory lock (swath/store/pg_claim.py) when the workers share no POSIX filesystem."""

    harvest_id: str
    # the fencing token of this holding (grows with each acquisition), written beside what the runner uploads;
    # None where the claim has none (flock: the kernel's lock is the fence)
    token: int | None

    def holder(self) -> str: ...
    def try_acquire(self) -> bool: ...
    def acquire(self, *, give_up: threading.Event) -> bool: ...
    def check(self) -> None: ...
    def release(self) -> None: ...


def wait_to_acquire(claim: Claim, give_up: threading.Event) -> bool:
    """Wait until `claim` is free and take it; False if `give_up` was set first (every Claim's `acquire`)."""
    while not claim.try_acquire():
        if give_up.wait(POLL):
            return False
    return True


class HarvestClaim:
    """The right to run one harvest id in this process; `acquire()` before touching its files."""

    def __init__(self, *, data_root: Path, harvest_id: str) -> None:
        self.data_root = data_root
        self.path = data_root / ".swath" / "claims" / f"{safe_id(harvest_id)}.lock"
        self.harvest_id = harvest_id
        self._fd: int | None = None
        self.token: int | None = None  # flock needs none: check() compares the locked file itself

    def holder(self) -> str:
        """Who holds the claim, as its holder wrote it (for log lines)."""
        try:
            info = json.loads(read_no_follow(self.path))  # never a link, FIFO or device planted there
            return f"pid {info['pid']} on {info['host']}"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def try_acquire(self) -> bool:
        """Take the claim if it is free; False if another process (or another claim object) holds it."""
        if self._fd is not None:
            return True
        make_dirs_inside(self.data_root, self.path.parent)  # a .swath link planted out of the root is refused
        while True:
            fd = open_lock(self.path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            if self._same_file(fd):
                break
            os.close(fd)  # locked a file its holder had just removed: try the one at the path now
        os.ftruncate(fd, 0)
        os.write(fd, json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                 "harvest_id": self.harvest_id}).encode())
        self._fd = fd
        return True

    def acquire(self, *, give_up: threading.Event) -> bool:
        return wait_to_acquire(self, give_up)

    def check(self) -> None:
        """Fencing before an irreversible step: the file we locked must still be the claim file."""
        if self._fd is None or not self._same_file(self._fd):
            raise ClaimLost(f"the claim on harvest {self.harvest_id} was removed or replaced ({self.path})")

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            if self._same_file(fd):
                self.path.unlink()  # while still locked: a waiter that opened it will see it gone
        finally:
            os.close(fd)  # closing the last descriptor drops the lock

    def _same_file(self, fd: int) -> bool:
        try:
            on_disk, ours = os.stat(self.path), os.fstat(fd)
            return (on_disk.st_dev, on_disk.st_ino) == (ours.st_dev, ours.st_ino)
        except FileNotFoundError:
            return False
