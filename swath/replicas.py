"""Replicas and verification (issue 36): every indexed WARC copied to the replica store and checked there, and
`swath storage verify`'s check of every copy in the primary and the replica (exists, size, SHA-1; `deep`: the
bytes read and hashed). Each copy's state goes into the store (storage_models.py), so the Operations page shows
the replication lag and the last verification.

The upload path (harvesters/, which has no store) calls `core.objects_copy.copy_to_replica(config, info, sha1=...,
retry=...)` after it verified an upload and before it announces the WARC; the monitor, recording warc_created, asks
the replica for the copy (one HEAD, `note_replica`) and records it as replicated, so the Operations page's lag
counts what is really not copied. `replicate_one` does the same from the CLI side (copy + record), and
`swath storage replicate` catches up whatever is not copied yet.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.objects import LocalStore, ObjectInfo, ObjectStore, storage_target, store_for
from swath.core.objects_copy import ObjectDiffers, copy_object
from swath.core.warc_files import is_object_url, key_in
from swath.harvesters.retry import RetryPolicy, storage_retry
from swath.messages import codes
from swath.store import Store
from swath.store.models import Warc
from swath.store.storage_models import MISSING, NO_SHA1, OK, PRIMARY, REPLICA, SHA1, SIZE, WarcCopy
from swath.store.storage_repo import IndexedCopy, finish_check, record_copy, start_check, warcs_after

log = logging.getLogger(__name__)
_BLOCK = 1 << 20
_STORE_FAULTS = (codes.STORAGE_UNAVAILABLE, codes.STORAGE_REFUSED)  # the store failed, not a WARC: stop

Progress = Callable[[int], None]  # WARCs done so far


@dataclass(frozen=True)
class Finding:
    """One copy that is not what the index records."""

    warc_id: str
    target: str  # PRIMARY or REPLICA
    url: str
    result: str  # MISSING, SIZE, SHA1, NO_SHA1
    detail: str


@dataclass
class Verified:
    """What a verification found: counts, and every copy that is missing or differs."""

    warcs: int = 0
    copies: int = 0
    ok: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def missing(self) -> int:
        return sum(f.result == MISSING for f in self.findings)

    @property
    def differs(self) -> int:
        return len(self.findings) - self.missing


@dataclass
class Replicated:
    warcs: int = 0
    copied: list[str] = field(default_factory=list)  # WARC ids copied now
    failed: list[tuple[str, str]] = field(default_factory=list)  # (WARC id, why)


def stores(config: Config) -> dict[str, ObjectStore]:
    """The primary store and, when configured, the replica, by their names in the store's tables."""
    retry = storage_retry(config)
    found = {PRIMARY: store_for(config, retry=retry)}
    if config.storage_replica_url:
        found[REPLICA] = store_for(config, retry=retry, replica=True)
    return found


def key_of(config: Config, warc: IndexedCopy) -> str:
    """The WARC's key in the stores: below the primary's prefix for an s3:// path (PathOutsideStore when it is
    not in the configured store), else its path from the data root, as the local store keys it."""
    if is_object_url(warc.path):
        target = storage_target(config)
        if target is None:
            raise SwathError(f"{warc.path} is in object storage but SWATH_STORAGE_URL is not set",
                             code=codes.PATH_OUTSIDE_STORE)
        return key_in(target, warc.path)
    if warc.rel_path:
        return warc.rel_path
    from swath.store.warc_index import relative_path

    rel = relative_path(warc.path, config.harvest_base)
    if rel is None:
        raise SwathError(f"{warc.path} is outside the data root {config.harvest_base}",
                         code=codes.PATH_OUTSIDE_DATA_ROOT)
    return rel


def check_copy(store: ObjectStore, key: str, *, size: int, sha1: str, deep: bool) -> tuple[str, str]:
    """(result, detail) of one copy: OK, MISSING, SIZE, SHA1 (deep: of its bytes; else of its metadata), or NO_SHA1
    (an S3 object without the SHA-1 it was stored with: not ours as stored)."""
    info = store.head(key)
    if info is None:
        return MISSING, "no such object"
    if info.size != size:
        return SIZE, f"{info.size} bytes, the index says {size}"
    if deep:
        found = _hash(store, key)
        return (OK, "") if found == sha1 else (SHA1, f"its bytes hash to sha1 {found}, the index says {sha1}")
    if info.sha1 is None:
        if isinstance(store, LocalStore):
            return OK, ""  # a file carries no SHA-1 beside it: the size is what a HEAD can check (--deep reads it)
        return NO_SHA1, "the object has no sha1 metadata"
    if info.sha1 != sha1:
        return SHA1, f"its sha1 metadata is {info.sha1}, the index says {sha1}"
    return OK, ""


def _hash(store: ObjectStore, key: str) -> str:
    digest = hashlib.sha1()
    with store.open_range(key, 0) as body:
        for block in iter(lambda: body.read(_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def indexed(config: Config, db: Store, *, collection_id: str | None) -> Iterator[IndexedCopy]:
    """Every indexed WARC (of one collection), page by page."""
    after = ""
    while True:
        with db.session() as s:
            page = warcs_after(s, after, collection_id=collection_id)
        if not page:
            return
        yield from page
        after = page[-1].id


def verify(config: Config, db: Store, *, collection_id: str | None = None, deep: bool = False,
           progress: Progress | None = None, found: Callable[[Finding], None] | None = None) -> Verified:
    """Check every indexed WARC's copy in the primary and the replica; each copy's state and the run's counts go
    into the store. `found` hears each finding as it is made (a long run shows them as it goes)."""
    targets = stores(config)
    with db.session() as s:
        check_id = start_check(s, collection_id=collection_id, deep=deep)
    result = Verified()
    for warc in indexed(config, db, collection_id=collection_id):
        result.warcs += 1
        states = []
        for name, configured in targets.items():
            store = _source(config, configured, warc) if name == PRIMARY else configured
            try:
                key = key_of(config, warc)
                state, detail = check_copy(store, key, size=warc.size, sha1=warc.sha1, deep=deep)
                url = store.url(key)
            except SwathError as exc:
                if exc.code in _STORE_FAULTS:
                    raise  # the store, not the WARC: no verdict on any copy
                state, detail, url = MISSING, exc.message, warc.path
            result.copies += 1
            states.append((name, state, detail))
            if state == OK:
                result.ok += 1
            else:
                finding = Finding(warc.id, name, url, state, detail)
                result.findings.append(finding)
                if found is not None:
                    found(finding)
        with db.session() as s:
            for name, state, detail in states:
                record_copy(s, warc_id=warc.id, target=name, result=state, detail=detail,
                            replicated=name == REPLICA and state == OK and _unreplicated(s, warc.id))
        if progress is not None:
            progress(result.warcs)
    with db.session() as s:
        finish_check(s, check_id, warcs=result.warcs, copies=result.copies, ok=result.ok, missing=result.missing,
                     differs=result.differs)
    return result


def _source(config: Config, primary: ObjectStore, warc: IndexedCopy) -> ObjectStore:
    """Where the WARC's primary copy is: the configured store for an s3:// path, the data root for a local one
    (a WARC harvested before the site moved to object storage)."""
    return primary if is_object_url(warc.path) else LocalStore(root=config.harvest_base)


def _unreplicated(s: Session, warc_id: str) -> bool:
    """A replica copy found good that the store did not know as replicated (copied before this was recorded)."""
    row = s.get(WarcCopy, (warc_id, REPLICA))
    return row is None or row.replicated_at is None


def replicate_one(config: Config, db: Store | None, *, warc_id: str, info: ObjectInfo, sha1: str | None = None,
                  stores_: dict[str, ObjectStore] | None = None, source: ObjectStore | None = None) -> ObjectInfo:
    """Copy one stored WARC (`info`: its primary object, as put_file returned it) to the replica and check the copy;
    what the upload path calls after a verified upload. Its state goes into `db` once the WARC is indexed there.
    Raises StorageUnavailable/StorageRefused (the replica), ObjectDiffers (the copy is not the WARC)."""
    targets = stores_ or stores(config)
    if REPLICA not in targets:
        raise SwathError("no replica store is configured (SWATH_STORAGE_REPLICA_URL)", code=codes.STORAGE_REFUSED)
    expected = sha1 or info.sha1
    if expected is None:
        raise ObjectDiffers(f"{info.url} has no SHA-1 to check its copy against")
    copied = copy_object(source or targets[PRIMARY], targets[REPLICA], info.key, size=info.size, sha1=expected)
    if db is not None:
        with db.session() as s:
            if s.get(Warc, warc_id) is not None:
                record_copy(s, warc_id=warc_id, target=REPLICA, result=OK, replicated=True)
    return copied


def replica_for_monitor(config: Config) -> ObjectStore | None:
    """The replica store as the monitor asks it: one try, a short timeout (one slow replica must not hold up the
    recording of every status); None without a replica or when WARCs are not in object storage."""
    if not config.storage_replica_url or not config.storage_url:
        return None
    from swath.core.objects import storage_target
    from swath.core.objects_s3 import S3Store

    target = storage_target(config, replica=True)
    assert target is not None
    return S3Store(target=target, retry=RetryPolicy(retries=0, backoff=0.0),  # one try: the monitor must not wait
                   timeout=min(config.http_timeout, 10.0))


def note_replica(s: Session, config: Config, replica: ObjectStore, *, warc_id: str, path: str, size: int,
                 sha1: str) -> bool:
    """Whether the replica holds the WARC just announced (HEAD: size and SHA-1); if so, recorded as replicated.
    A replica that fails to answer records nothing: the WARC counts as lag until a replicate or verify run."""
    try:
        if not is_object_url(path):
            return False
        target = storage_target(config)
        if target is None:
            return False
        state, _ = check_copy(replica, key_in(target, path), size=size, sha1=sha1, deep=False)
    except SwathError as exc:
        log.warning("replica of %s not checked: %s", warc_id, exc.message)
        return False
    if state == OK:
        record_copy(s, warc_id=warc_id, target=REPLICA, result=OK, replicated=True)
    return state == OK


def catch_up(config: Config, db: Store, *, collection_id: str | None = None, progress: Progress | None = None,
             copied: Callable[[str, str], None] | None = None) -> Replicated:
    """Copy to the replica every indexed WARC whose copy there is missing or differs (checked by HEAD: size and
    SHA-1), from a primary copy that is the WARC the index records; record each copy's state."""
    targets = stores(config)
    if REPLICA not in targets:
        raise SwathError("no replica store is configured (SWATH_STORAGE_REPLICA_URL)", code=codes.STORAGE_REFUSED)
    primary, replica = targets[PRIMARY], targets[REPLICA]
    result = Replicated()
    for warc in indexed(config, db, collection_id=collection_id):
        result.warcs += 1
        try:
            key = key_of(config, warc)
            state, _ = check_copy(replica, key, size=warc.size, sha1=warc.sha1, deep=False)
            if state != OK:
                source = _source(config, primary, warc)
                info = ObjectInfo(key=key, url=source.url(key), size=warc.size)  # copy_object checks the source
                replicate_one(config, db, warc_id=warc.id, info=info, sha1=warc.sha1, stores_=targets, source=source)
                result.copied.append(warc.id)
                if copied is not None:
                    copied(warc.id, replica.url(key))
            else:
                with db.session() as s:
                    record_copy(s, warc_id=warc.id, target=REPLICA, result=OK, replicated=_unreplicated(s, warc.id))
        except SwathError as exc:
            if exc.code in _STORE_FAULTS:
                raise
            result.failed.append((warc.id, exc.message))
        if progress is not None:
            progress(result.warcs)
    return result
