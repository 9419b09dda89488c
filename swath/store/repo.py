"""Repository functions: sources and their sealed credentials, launch records (jobs), exports and WARCs read
back, as the requester, scheduler and dashboard use them; what the monitor records from messages is in
monitor_repo.py.

Each takes an open Session (one transaction, see Store.session) so callers decide what commits together.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Protocol, TypeVar

from sqlalchemy import Select, delete, func, select
from sqlalchemy.orm import Session

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store.models import (
    ACCEPTED,
    ACTIVE_STATES,
    CANCELLED,
    FAILURE,
    QUEUED,
    Attachment,
    Export,
    Job,
    Secret,
    Source,
    Warc,
    utcnow,
)
from swath.store.secrets import SecretBox
from swath.store.web_models import CollectionSet


class NotFound(SwathError, LookupError):
    """No such source, job or export."""

    code = codes.BAD_REQUEST


class Conflict(SwathError, ValueError):
    """The request contradicts what the store holds (duplicate name, deleted source, ...)."""

    code = codes.BAD_REQUEST


def new_id() -> str:
    return uuid.uuid4().hex[:12]


# ---------------------------------------------------------------- sources


def create_source(s: Session, *, name: str, harvest_type: str, platform: str, seeds: Sequence[Mapping[str, object]],
                  options: Mapping[str, object], credentials: dict[str, str], secrets: Mapping[str, str],
                  box: SecretBox, collection_set_id: str, collection_id: str | None,
                  source_id: str | None = None) -> Source:
    """A new source; its `secrets` (name -> value) are sealed with `box` before they reach the session.
    `source_id`: an id kept from elsewhere (an SFM collection's, by `swath sfm import`); else a new one."""
    if name_taken(s, name, collection_set_id=collection_set_id):
        raise Conflict(f"a source named {name!r} exists already in this group (deleted ones count until purged)")
    sealed = {k: box.seal(v, what=f"credential {k!r} of source {name!r}") for k, v in secrets.items()}
    source_id = source_id or new_id()
    source = Source(id=source_id, name=name, harvest_type=harvest_type, platform=platform, seeds=seeds,
                    options=options, credentials=credentials, collection_set_id=collection_set_id,
                    collection_id=collection_id or source_id)
    s.add(source)
    s.flush()
    s.add_all(Secret(source_id=source_id, name=k, scheme=scheme, value=text) for k, (scheme, text) in sealed.items())
    return source


def name_taken(s: Session, name: str, *, collection_set_id: str) -> bool:
    """Whether a source of the same group already has `name`: the group owning the web collection set; sets the
    web does not know (made by the CLI) are one group of their own. Names are not unique across groups."""
    owner = s.scalar(select(CollectionSet.group_id).where(CollectionSet.id == collection_set_id))
    web_sets = select(CollectionSet.id) if owner is None else select(CollectionSet.id).where(
        CollectionSet.group_id == owner)
    scope = Source.collection_set_id.not_in(web_sets) if owner is None else Source.collection_set_id.in_(web_sets)
    return s.scalar(select(Source.id).where(Source.name == name, scope).limit(1)) is not None


def find_source(s: Session, ident: str, *, deleted: bool = False) -> Source:
    """A source by id or name; deleted sources only when `deleted`. A name several groups use is refused: the
    id says which."""
    source = s.get(Source, ident)
    if source is None:
        named = list(s.scalars(select(Source).where(Source.name == ident).limit(2)))
        if len(named) > 1:
            raise Conflict(f"several harvest sources are named {ident!r}; name one by its id "
                           "(`swath harvest sources` lists them)")
        source = named[0] if named else None
    if source is None or (source.deleted_at is not None and not deleted):
        raise NotFound(f"no harvest source {ident!r}; `swath harvest sources` lists them")
    return source


def list_sources(s: Session, *, deleted: bool = False) -> list[Source]:
    query = select(Source).order_by(Source.created_at, Source.name)
    if not deleted:
        query = query.where(Source.deleted_at.is_(None))
    return list(s.scalars(query))


def secrets_of(s: Session, source: Source, box: SecretBox) -> dict[str, str]:
    """The source's stored credential values, opened with `box` (never log or print them)."""
    rows = s.scalars(select(Secret).where(Secret.source_id == source.id))
    return {row.name: box.open(row.scheme, row.value, what=f"credential {row.name!r} of source {source.name!r}")
            for row in rows}


def reseal_secrets(s: Session, box: SecretBox) -> dict[str, int]:
    """Seal every legacy plain value and re-seal values under older keys with the newest; counts by outcome."""
    counts = {"encrypted": 0, "rekeyed": 0, "unchanged": 0}
    for row, source_name in s.execute(select(Secret, Source.name).join(Source, Source.id == Secret.source_id)):
        reseal_row(row, box, counts, what=f"credential {row.name!r} of source {source_name!r}")
    return counts


class Sealed(Protocol):
    """A stored credential value: a source's Secret or a web account's."""

    scheme: str
    value: str


def reseal_row(row: Sealed, box: SecretBox, counts: dict[str, int], *, what: str) -> None:
    """Re-seal one stored value (a row with `scheme` and `value`) under the newest key, counted by outcome."""
    sealed = box.reseal(row.scheme, row.value, what=what)
    if sealed is None:
        counts["unchanged"] += 1
        return
    counts["encrypted" if row.scheme != sealed[0] else "rekeyed"] += 1
    row.scheme, row.value = sealed


def set_validation(s: Session, source: Source, state: str, comment: str | None) -> None:
    source.validation, source.validation_comment, source.validated_at = state, comment, utcnow()


def set_schedule(s: Session, source: Source, *, kind: str | None, expr: str | None,
                 next_due: dt.datetime | None) -> None:
    source.schedule_kind, source.schedule_expr, source.next_due = kind, expr, next_due


def soft_delete(s: Session, source: Source) -> None:
    source.deleted_at = utcnow()
    source.next_due = None  # a deleted source is never scheduled again


def purge(s: Session, ids: Iterable[str] | None = None) -> list[str]:
    """Permanently remove soft-deleted sources (secrets and attachments go; job history stays); of `ids` only
    when given. Their WARCs and exports: swath/purge.py, which calls this."""
    query = select(Source).where(Source.deleted_at.is_not(None))
    if ids is not None:
        query = query.where(Source.id.in_(list(ids)))
    gone = list(s.scalars(query))
    ids = [src.id for src in gone]
    if ids:
        # explicit deletes: SQLite only cascades with its foreign_keys pragma, which we set but do not rely on
        s.execute(delete(Secret).where(Secret.source_id.in_(ids)))
        s.execute(delete(Attachment).where(Attachment.source_id.in_(ids)))
        for job in s.scalars(select(Job).where(Job.source_id.in_(ids))):
            job.source_id = None
        s.execute(delete(Source).where(Source.id.in_(ids)))
    return [src.name for src in gone]


def attach(s: Session, source: Source, pairs: Iterable[tuple[str, str]]) -> tuple[int, int]:
    """Attach (remote_id, item_id) pairs to `source`; returns (new, updated)."""
    new = updated = 0
    for remote_id, item_id in pairs:
        row = s.get(Attachment, (source.id, remote_id))
        if row is None:
            s.add(Attachment(source_id=source.id, remote_id=remote_id, item_id=item_id))
            new += 1
        elif row.item_id != item_id:
            row.item_id, row.attached_at = item_id, utcnow()
            updated += 1
    return new, updated


def attachments(s: Session, source_id: str) -> dict[str, str]:
    rows = s.scalars(select(Attachment).where(Attachment.source_id == source_id))
    return {row.remote_id: row.item_id for row in rows}


# ---------------------------------------------------------------- jobs (launch records)


def add_job(s: Session, *, job_id: str, source: Source, routing_key: str, trigger: str,
            scheduled_for: dt.datetime | None = None) -> Job:
    job = Job(id=job_id, source_id=source.id, harvest_type=source.harvest_type, routing_key=routing_key,
              trigger=trigger, scheduled_for=scheduled_for, status=QUEUED)
    s.add(job)
    s.flush()
    return job


def get_job(s: Session, job_id: str) -> Job:
    job = s.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id!r}; `swath harvest jobs` lists them")
    return job


def active_job(s: Session, source_id: str) -> Job | None:
    return s.scalar(select(Job).where(Job.source_id == source_id, Job.status.in_(ACTIVE_STATES))
                    .order_by(Job.created_at.desc()).limit(1))


def unpublished_jobs(s: Session, *, lock: bool = False) -> list[Job]:
    """The outbox: launch records whose harvest.start has not been confirmed by the broker yet."""
    query = select(Job).where(Job.published_at.is_(None), Job.status == QUEUED).order_by(Job.created_at)
    if lock:
        query = query.with_for_update(skip_locked=True)
    return list(s.scalars(query))


def fail_job(s: Session, job: Job, code: str, message: str) -> None:
    job.status = FAILURE
    job.errors = [*job.errors, {"code": code, "message": message}]
    job.date_ended = utcnow().isoformat() + "+00:00"
    job.updated_at = utcnow()


def cancel_job(s: Session, job: Job) -> None:
    job.status = CANCELLED
    job.date_ended = job.date_ended or utcnow().isoformat() + "+00:00"
    job.updated_at = utcnow()


def list_jobs(s: Session, *, source_id: str | None = None, status: str | None = None,
              limit: int = 50, source_ids: list[str] | None = None,
              set_ids: Collection[str] | None = None) -> list[Job]:
    """The newest jobs; of one source, or of the sources in `source_ids`, or of the sources of the collection
    sets in `set_ids` (when they are not None)."""
    query = select(Job).order_by(Job.created_at.desc(), Job.id).limit(limit)
    if set_ids is not None:  # a join, not a list of sources: the newest are read from ix_jobs_created_at
        query = query.join(Source, Source.id == Job.source_id).where(Source.collection_set_id.in_(set_ids))
    if source_id:
        query = query.where(Job.source_id == source_id)
    if source_ids is not None:
        query = query.where(Job.source_id.in_(source_ids))
    if status:
        query = query.where(Job.status == status)
    return list(s.scalars(query))


def claim_due(s: Session, *, now: dt.datetime, job_id: Callable[[Source, dt.datetime], str],
              routing_key: Callable[[Source], str],
              next_after: Callable[[Source, dt.datetime], dt.datetime]) -> list[Job]:
    """For each validated, scheduled source that is due and has no active job: write the launch record
    and move next_due past `now`, in the caller's one transaction. Busy sources stay due (no overlap)."""
    query = (select(Source)
             .where(Source.next_due.is_not(None), Source.next_due <= now, Source.deleted_at.is_(None),
                    Source.validation == ACCEPTED)
             .order_by(Source.next_due)
             .with_for_update(skip_locked=True))
    claimed = []
    for source in s.scalars(query):
        if active_job(s, source.id) is not None:
            continue
        slot = source.next_due
        assert slot is not None
        claimed.append(add_job(s, job_id=job_id(source, slot), source=source, routing_key=routing_key(source),
                               trigger="schedule", scheduled_for=slot))
        source.next_due = next_after(source, now)
    return claimed


# ---------------------------------------------------------------- exports and reading back


def add_export(s: Session, *, export_id: str, export_type: str, fmt: str, path: str,
               collection_id: str | None) -> Export:
    export = Export(id=export_id, export_type=export_type, format=fmt, path=path, collection_id=collection_id)
    s.add(export)
    s.flush()
    return export


def get_export(s: Session, export_id: str) -> Export:
    export = s.get(Export, export_id)
    if export is None:
        raise NotFound(f"no export {export_id!r}; `swath export list` lists them")
    return export


def list_exports(s: Session, *, limit: int = 50) -> list[Export]:
    return list(s.scalars(select(Export).order_by(Export.created_at.desc()).limit(limit)))


def warcs_of(s: Session, harvest_ids: list[str]) -> dict[str, list[Warc]]:
    out: dict[str, list[Warc]] = {h: [] for h in harvest_ids}
    if harvest_ids:
        for warc in s.scalars(select(Warc).where(Warc.harvest_id.in_(harvest_ids)).order_by(Warc.path)):
            out[warc.harvest_id].append(warc)
    return out


def warcs_for_collection(s: Session, collection_id: str | None = None) -> list[Warc]:
    query = select(Warc).order_by(Warc.path)
    if collection_id is not None:
        query = query.where(Warc.collection_id == collection_id)
    return list(s.scalars(query))


def warc_volume(s: Session, *, sets: Collection[str] | None = None, offset: int = 0,
                limit: int | None = None) -> list[tuple[str, str, int, int]]:
    """(collection_set_id, collection_id, WARC count, bytes) per collection; of the collection sets in `sets`
    (None: all), a page of them from `offset` when `limit` is given."""
    rows = s.execute(_volume(select(Warc.collection_set_id, Warc.collection_id, func.count(), func.sum(Warc.bytes)),
                             sets).order_by(Warc.collection_set_id, Warc.collection_id).offset(offset).limit(limit))
    return [(a, b, int(n), int(total or 0)) for a, b, n, total in rows]


AnySelect = TypeVar("AnySelect", bound="Select[*tuple[Any, ...]]")  # a select of any columns


def count_warc_volume(s: Session, *, sets: Collection[str] | None = None) -> int:
    """How many rows warc_volume has."""
    return int(s.scalar(select(func.count()).select_from(_volume(select(Warc.collection_id), sets).subquery())) or 0)


def _volume(query: AnySelect, sets: Collection[str] | None) -> AnySelect:
    if sets is not None:
        query = query.where(Warc.collection_set_id.in_(sets))
    return query.group_by(Warc.collection_set_id, Warc.collection_id)
