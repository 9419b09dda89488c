"""Closed WARCs into object storage (SWATH_STORAGE_URL=s3://...; docs/configuration.md "Object storage").

A WARC is written in its collection folder as always; once closed, the recorder hands it here (`UploadQueue`, a
thread of its own) before the state of its data is committed: its commit (staged state + journal) is put beside
it (`<warc>.commit.json`), it is uploaded and checked (size and SHA-1, by HEAD), the commit is applied, and only
then are the local file and its commit removed and the WARC announced with the object's URL. Before the upload and
before the commit the runner checks it still holds the harvest's claim (`fence`: a stale runner, whose claim a
newer one took, is refused with `claim_fenced` and uploads nothing more), and the object carries the runner's
fencing token in its metadata (`fence-token`). A crash or a store
that fails at any point leaves the closed WARC (and its commit) on disk: the next run of the harvest uploads it
first (`upload_leftovers`), so nothing is lost and its data's state advances exactly once. The object's key is
the file's path under the harvest root, so the bucket mirrors the folders (SFM paths map one to one).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.jsontypes import JSONObject
from swath.core.objects import ObjectInfo, ObjectStore, StorageUnavailable, store_for
from swath.core.objects_base import FENCE_METADATA
from swath.core.objects_copy import copy_to_replica
from swath.harvesters.retry import storage_retry
from swath.harvesters.state import write_json_atomic
from swath.harvesters.warc import ClosedWarc, date_created_of, name_pattern, warc_id

COMMIT_SUFFIX = ".commit.json"
# after a replica copy fails, later WARCs skip the replica this long: each copy tried with the full retry
# policy would hold every upload (and the harvest behind it) for the whole back-off while the replica is down
REPLICA_PAUSE = 60.0
# "uploading <name>" (INFO) as each upload begins: what an operator reads, and the event fault tests wait for
log = logging.getLogger(__name__)
Commit = Callable[[JSONObject], None]


@dataclasses.dataclass(kw_only=True)
class WarcUploader:
    """The object-storage side of one harvest's WARCs (only when SWATH_STORAGE_URL is set)."""

    store: ObjectStore
    base: Path  # the harvest root: keys are paths below it
    directory: Path  # the harvest's collection folder
    harvest_id: str
    config: Config | None = None  # its replica (SWATH_STORAGE_REPLICA_URL), if any, gets a copy of each WARC
    # a replica that failed: told the message (the harvest's `replica_lag` warning); the WARC goes on regardless
    on_replica_lag: Callable[[str], None] | None = None
    fence: Callable[[], None] = lambda: None  # raises ClaimLost (ClaimFenced) once this runner's claim is gone
    fence_token: int | None = None  # the claim's token (None with flock), written beside each object
    _replica_failed_at: float | None = dataclasses.field(default=None, init=False, repr=False)

    @classmethod
    def for_harvest(cls, config: Config, directory: Path, harvest_id: str, *,
                    fence: Callable[[], None] = lambda: None, fence_token: int | None = None,
                    on_replica_lag: Callable[[str], None] | None = None) -> WarcUploader | None:
        if not config.storage_url:
            return None
        return cls(store=store_for(config, retry=storage_retry(config)), base=config.harvest_base.resolve(),
                   directory=directory.resolve(), harvest_id=harvest_id, config=config,
                   on_replica_lag=on_replica_lag, fence=fence, fence_token=fence_token)

    def key(self, path: Path) -> str:
        return path.resolve().relative_to(self.base).as_posix()

    def upload(self, warc: ClosedWarc, commit: JSONObject | None, apply: Commit) -> ClosedWarc:
        """Upload `warc` (its `commit` already kept beside it: `keep_commit`), check it, apply the commit, remove
        the local copy; the WARC as announced (its url). Raises StorageUnavailable / StorageRefused with
        everything kept; ClaimLost (ClaimFenced) when a newer runner holds the harvest, with nothing uploaded
        or committed after the check."""
        self.fence()
        log.info("harvest %s: uploading %s (%d bytes)", self.harvest_id, warc.path.name, warc.bytes)
        metadata = {} if self.fence_token is None else {FENCE_METADATA: str(self.fence_token)}
        info = self.store.put_file(self.key(warc.path), warc.path, sha1=warc.sha1, metadata=metadata)
        if info.size != warc.bytes or (info.sha1 is not None and info.sha1 != warc.sha1):
            raise StorageUnavailable(f"{info.url} holds {info.size} bytes, sha1 {info.sha1}, not the "
                                     f"{warc.bytes} bytes, sha1 {warc.sha1} of {warc.path.name}; kept on disk")
        self._replicate(info, warc.sha1)
        # the upload may have taken long enough for the claim to pass: the commit (fenced itself in the store)
        # and the removal of the local copy only while this runner still holds it
        self.fence()
        if commit is not None:
            apply(commit)
        warc.path.unlink(missing_ok=True)
        commit_path(warc.path).unlink(missing_ok=True)
        return dataclasses.replace(warc, url=info.url)

    def _replicate(self, info: ObjectInfo, sha1: str) -> None:
        """The verified object copied to the replica and checked there; a failure is lag, never a lost WARC: it
        is safe in the primary, announced as usual, and `swath storage replicate` copies it later. One quick
        retry only, and after a failure the next REPLICA_PAUSE seconds of WARCs are not tried at all."""
        if self.config is None:
            return
        since = None if self._replica_failed_at is None else time.monotonic() - self._replica_failed_at
        if since is not None and since < REPLICA_PAUSE:
            self._lag(f"{info.url} not copied to the replica: it failed {since:.0f} s ago and is tried again "
                      f"{REPLICA_PAUSE:.0f} s after that; `swath storage replicate` will copy it")
            return
        quick = dataclasses.replace(storage_retry(self.config), retries=min(1, self.config.http_retries))
        try:
            copy_to_replica(self.config, info, sha1=sha1, retry=quick)
        except SwathError as exc:
            self._replica_failed_at = time.monotonic()
            self._lag(f"{info.url} not copied to the replica ({exc.code}: {exc}); `swath storage replicate` will")
        else:
            self._replica_failed_at = None

    def _lag(self, message: str) -> None:
        log.warning("%s", message)
        if self.on_replica_lag is not None:
            self.on_replica_lag(message)

    def upload_leftovers(self, paths: list[Path], apply: Commit) -> list[ClosedWarc]:
        """A previous run's closed WARCs still on disk (an upload that failed or was cut short), in serial
        order: each uploaded and its commit applied now, as that run would have."""
        done = []
        for path in paths:
            commit = _read_commit(commit_path(path))
            done.append(self.upload(ClosedWarc.of(path, self.harvest_id), commit, apply))
        return done

    def settle(self, done: list[Path], *, committed: int, serial: Callable[[Path], int], apply: Commit,
               warn: Callable[[str], None]) -> list[ClosedWarc]:
        """What earlier runs left, settled against the last WARC whose state was committed (its serial,
        `committed`): a WARC or object past it was written by a run that died before its commit, so its data is
        fetched again and the object is removed (a kill between upload and commit would otherwise leave its items
        in the store twice); a local WARC up to it is already in the store (a run on another host went on after
        it, or this host died before removing it). Then the leftovers past it go up first (`done`: by serial)."""
        kept = []
        for warc in self.stored():
            if serial(warc.path) <= committed:
                kept.append(warc)
                continue
            self.discard(warc)
            warn(f"{warc.path.name} was uploaded by a run that ended before its state was committed: removed, "
                 "its data fetched again")
        for path in done:
            if serial(path) <= committed:
                path.unlink(missing_ok=True)
                commit_path(path).unlink(missing_ok=True)
        return kept + self.upload_leftovers([p for p in done if serial(p) > committed], apply)

    def discard(self, warc: ClosedWarc) -> None:
        """Remove an object of this harvest whose state was never committed (recorder.py `_resume_uploads`)."""
        self.fence()
        self.store.delete(self.key(warc.path))

    def stored(self) -> list[ClosedWarc]:
        """This harvest's WARCs in the store (a HEAD each for its SHA-1), by serial."""
        pattern = name_pattern(self.harvest_id)
        found: list[tuple[int, ObjectInfo]] = []
        for info in self.store.list(self.key(self.directory) + "/"):
            match = pattern.match(info.key.rpartition("/")[2])
            if match and not match.group(3):
                found.append((int(match.group(2)), info))
        warcs = []
        for _, info in sorted(found, key=lambda pair: pair[0]):
            head = self.store.head(info.key) or info
            name = info.key.rpartition("/")[2]
            warcs.append(ClosedWarc(path=self.base / info.key, sha1=head.sha1 or "", bytes=head.size,
                                    warc_id=warc_id(self.harvest_id, name), date_created=date_created_of(name),
                                    url=info.url))
        return warcs


class UploadQueue:
    """One thread that stores a harvest's closed WARCs in order, so the WARC writer goes on meanwhile.

    `put` (on the writer thread) keeps the WARC's commit beside it first, so a crash at any later point leaves
    both for the next run. After a failure nothing more is uploaded (later WARCs and their commits stay on disk,
    in order, for the next run) and `failed` says why; `drain` waits until all that was put is handled."""

    def __init__(self, *, uploader: WarcUploader, apply: Commit, on_stored: Callable[[ClosedWarc], None],
                 on_failed: Callable[[BaseException], None]) -> None:
        self.uploader = uploader
        self.apply = apply
        self.on_stored = on_stored
        self.on_failed = on_failed
        self.failed: BaseException | None = None
        self.pending_bytes = 0  # closed WARCs waiting to go up: still this harvest's bytes
        self._queue: queue.SimpleQueue[tuple[ClosedWarc, JSONObject | None] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def put(self, warc: ClosedWarc, commit: JSONObject | None) -> None:
        if commit is not None:
            write_json_atomic(commit_path(warc.path), commit)
        with self._lock:
            self.pending_bytes += warc.bytes
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"upload-{self.uploader.harvest_id}",
                                                daemon=True)
                self._thread.start()
        self._queue.put((warc, commit))

    def drain(self) -> None:
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            warc, commit = item
            try:
                if self.failed is None:
                    self.on_stored(self.uploader.upload(warc, commit, self.apply))
            except BaseException as exc:  # noqa: BLE001 - handed to the recorder, which ends the harvest
                self.failed = exc
                self.on_failed(exc)
            finally:
                with self._lock:
                    self.pending_bytes -= warc.bytes


def commit_path(warc: Path) -> Path:
    return warc.with_name(warc.name + COMMIT_SUFFIX)


def _read_commit(path: Path) -> JSONObject | None:
    try:
        value: JSONObject = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    return value

