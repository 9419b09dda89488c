"""Queries of the web application's tables (swath/store/web_models.py): accounts, sessions, login throttling,
collection sets and who may see them, the change history, export requesters."""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets

from sqlalchemy import Select, delete, func, or_, select, update
from sqlalchemy.orm import QueryableAttribute, Session

from swath.store.models import Export, Job, Source, utcnow
from swath.store.repo import AnySelect, Conflict, NotFound, new_id
from swath.store.web_models import (
    Change,
    CollectionSet,
    ExportRequest,
    Group,
    LoginAttempt,
    Membership,
    User,
    WebSession,
)

# ---------------------------------------------------------------- users and groups


def add_user(s: Session, *, name: str, password_hash: str, is_admin: bool = False) -> User:
    if s.scalar(select(User.id).where(User.name == name)) is not None:
        raise Conflict(f"a user named {name!r} exists already")
    user = User(id=new_id(), name=name, password_hash=password_hash, is_admin=is_admin)
    s.add(user)
    s.flush()
    return user


def user_named(s: Session, name: str) -> User | None:
    return s.scalar(select(User).where(User.name == name, User.disabled_at.is_(None)))


def list_users(s: Session) -> list[User]:
    return list(s.scalars(select(User).order_by(User.name)))


def group_named(s: Session, name: str, *, create: bool = False) -> Group:
    group = s.scalar(select(Group).where(Group.name == name))
    if group is None:
        if not create:
            raise NotFound(f"no group {name!r}")
        group = Group(id=new_id(), name=name)
        s.add(group)
        s.flush()
    return group


def list_groups(s: Session) -> list[Group]:
    return list(s.scalars(select(Group).order_by(Group.name)))


def join(s: Session, user: User, group: Group) -> None:
    if s.get(Membership, (user.id, group.id)) is None:
        s.add(Membership(user_id=user.id, group_id=group.id))
        s.flush()


def set_groups(s: Session, user: User, group_ids: set[str]) -> None:
    """Make `user` a member of exactly these groups (unknown ids are ignored)."""
    known = {g.id for g in list_groups(s)} & group_ids
    for row in s.scalars(select(Membership).where(Membership.user_id == user.id)):
        if row.group_id not in known:
            s.delete(row)
    for group_id in known:
        if s.get(Membership, (user.id, group_id)) is None:
            s.add(Membership(user_id=user.id, group_id=group_id))
    s.flush()


def groups_of(s: Session, user: User) -> list[Group]:
    return list(s.scalars(select(Group).join(Membership, Membership.group_id == Group.id)
                          .where(Membership.user_id == user.id).order_by(Group.name)))


def members(s: Session) -> dict[str, list[str]]:
    """group id -> the names of its members."""
    out: dict[str, list[str]] = {}
    for group_id, name in s.execute(select(Membership.group_id, User.name).join(User, User.id == Membership.user_id)
                                    .order_by(User.name)):
        out.setdefault(group_id, []).append(name)
    return out


# ---------------------------------------------------------------- sessions and login attempts


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def open_session(s: Session, user: User, *, lifetime: dt.timedelta) -> tuple[str, WebSession]:
    """A new session: (the token for the cookie, the row keeping only its hash)."""
    token = secrets.token_urlsafe(32)
    row = WebSession(token_hash=token_hash(token), user_id=user.id, csrf=secrets.token_urlsafe(32),
                     expires_at=utcnow() + lifetime)
    s.add(row)
    s.flush()
    return token, row


def session_user(s: Session, token: str) -> tuple[WebSession, User] | None:
    row = s.get(WebSession, token_hash(token))
    if row is None or row.expires_at <= utcnow():
        return None
    user = s.get(User, row.user_id)
    if user is None or user.disabled_at is not None:
        return None
    return row, user


def set_flash(s: Session, session: WebSession, message: str) -> None:
    """What the next page of this session says (once)."""
    s.execute(update(WebSession).where(WebSession.token_hash == session.token_hash).values(flash=message[:2000]))


def take_flash(s: Session, session: WebSession) -> str | None:
    """The session's flash message, forgotten as it is read."""
    if not session.flash:
        return None
    s.execute(update(WebSession).where(WebSession.token_hash == session.token_hash).values(flash=None))
    return session.flash


def close_session(s: Session, token: str) -> None:
    s.execute(delete(WebSession).where(WebSession.token_hash == token_hash(token)))


def close_sessions_of(s: Session, user: User, *, keep: str | None = None) -> None:
    """Log the user out everywhere (a password change), except the session whose token is `keep`."""
    query = delete(WebSession).where(WebSession.user_id == user.id)
    if keep is not None:
        query = query.where(WebSession.token_hash != token_hash(keep))
    s.execute(query)


def prune(s: Session, *, attempts_before: dt.datetime) -> None:
    """Forget expired sessions and login attempts older than the throttling window needs."""
    s.execute(delete(WebSession).where(WebSession.expires_at <= utcnow()))
    s.execute(delete(LoginAttempt).where(LoginAttempt.at < attempts_before))


def record_attempt(s: Session, *, name: str, address: str, ok: bool) -> int:
    """The attempt's id (for attempt_succeeded / forget_attempt)."""
    row = LoginAttempt(name=name[:100], address=address[:100], ok=ok)
    s.add(row)
    s.flush()
    return row.id


def attempt_succeeded(s: Session, attempt_id: int) -> None:
    s.execute(update(LoginAttempt).where(LoginAttempt.id == attempt_id).values(ok=True))


def forget_attempt(s: Session, attempt_id: int) -> None:
    s.execute(delete(LoginAttempt).where(LoginAttempt.id == attempt_id))


def recent_failures(s: Session, *, name: str, address: str, since: dt.datetime) -> int:
    """Failed logins for this name or from this address since `since`."""
    return int(s.scalar(select(func.count()).select_from(LoginAttempt).where(
        LoginAttempt.ok.is_(False), LoginAttempt.at >= since,
        or_(LoginAttempt.name == name[:100], LoginAttempt.address == address[:100]))) or 0)


# ---------------------------------------------------------------- collection sets and visibility


def visible_group_ids(s: Session, user: User) -> set[str] | None:
    """The groups whose collection sets `user` sees; None: all of them (an admin)."""
    if user.is_admin:
        return None
    return set(s.scalars(select(Membership.group_id).where(Membership.user_id == user.id)))


def only_visible(s: Session, user: User, query: AnySelect, group_id: QueryableAttribute[str]) -> AnySelect:
    """`query` narrowed to rows whose `group_id` column is one of the groups `user` sees (an admin: all)."""
    groups = visible_group_ids(s, user)
    return query if groups is None else query.where(group_id.in_(groups))


def list_sets(s: Session, user: User, *, offset: int = 0, limit: int | None = None) -> list[CollectionSet]:
    """The sets `user` sees, active ones first, by name; a page of them from `offset` when `limit` is given."""
    query = select(CollectionSet).where(CollectionSet.purge_after.is_(None)).order_by(  # deleted: gone
        CollectionSet.deactivated_at.is_not(None), CollectionSet.name, CollectionSet.id)
    return list(s.scalars(only_visible(s, user, query, CollectionSet.group_id).offset(offset).limit(limit)))


def count_sets(s: Session, user: User) -> int:
    return int(s.scalar(only_visible(s, user, select(func.count()).select_from(CollectionSet).where(
        CollectionSet.purge_after.is_(None)), CollectionSet.group_id)) or 0)


def visible_set_ids(s: Session, user: User) -> Select[str]:
    """The ids of the sets `user` sees, as a subquery for `in_` (the database filters; no list of ids is sent)."""
    return only_visible(s, user, select(CollectionSet.id).where(CollectionSet.purge_after.is_(None)),
                        CollectionSet.group_id)


def get_set(s: Session, user: User, set_id: str) -> CollectionSet:
    """The set if `user` may see it; NotFound otherwise, the same as for a set that does not exist."""
    row = s.get(CollectionSet, set_id)
    if row is None or row.purge_after is not None or not sees(s, user, row.group_id):
        raise NotFound(f"no collection set {set_id!r}")
    return row


def sees(s: Session, user: User, group_id: str) -> bool:
    """Whether `user` sees what group `group_id` owns (a member, or an admin)."""
    groups = visible_group_ids(s, user)
    return groups is None or group_id in groups


def set_name_taken(s: Session, group_id: str, name: str) -> bool:
    """Whether a collection set of the group has `name` (set names are unique per group, deactivated ones too)."""
    return s.scalar(select(CollectionSet.id).where(CollectionSet.group_id == group_id, CollectionSet.name == name)
                    .limit(1)) is not None


def set_folder_taken(s: Session, set_id: str) -> bool:
    """Whether collections/<set_id> belongs to a set already: the web's, or one the CLI's sources name."""
    return s.get(CollectionSet, set_id) is not None or s.scalar(
        select(Source.id).where(Source.collection_set_id == set_id).limit(1)) is not None


def add_set(s: Session, *, set_id: str, name: str, description: str | None, group: Group) -> CollectionSet:
    if s.get(CollectionSet, set_id) is not None:
        raise Conflict(f"a collection set with id {set_id!r} exists already")
    row = CollectionSet(id=set_id, name=name, description=description, group_id=group.id)
    s.add(row)
    s.flush()
    return row


def claim_set(s: Session, set_id: str, group_name: str) -> bool:
    """Collection set `set_id` owned by group `group_name` for the command line's `--group`: the web's set, which
    must be that group's, or a new one (True) when no source uses the folder yet (those made without --group would
    be handed to the group unasked)."""
    group = group_named(s, group_name)
    row = s.get(CollectionSet, set_id)
    if row is not None:
        if row.group_id != group.id:
            raise Conflict(f"collection set {set_id!r} belongs to another group than {group_name!r}; "
                           "give another --collection-set")
        return False
    if s.scalar(select(Source.id).where(Source.collection_set_id == set_id).limit(1)) is not None:
        raise Conflict(f"collection set {set_id!r} holds sources made without --group; give another "
                       "--collection-set for the group's")
    add_set(s, set_id=set_id, name=set_id, description=None, group=group)
    return True


def collections_of(s: Session, set_id: str) -> list[Source]:
    return list(s.scalars(select(Source).where(Source.collection_set_id == set_id)
                          .order_by(Source.deleted_at.is_not(None), Source.name)))


def active_counts(s: Session, set_ids: list[str]) -> dict[str, int]:
    """set id -> its active collections, in one query."""
    rows = s.execute(select(Source.collection_set_id, func.count()).where(
        Source.collection_set_id.in_(set_ids), Source.deleted_at.is_(None)).group_by(Source.collection_set_id))
    return {set_id: int(n) for set_id, n in rows}


def recent_runs(s: Session, set_ids: list[str] | Select[str], limit: int) -> list[tuple[Job, Source]]:
    """The newest runs of the collections of these sets, with their collection."""
    return [(job, src) for job, src in s.execute(
        select(Job, Source).join(Source, Source.id == Job.source_id).where(Source.collection_set_id.in_(set_ids))
        .order_by(Job.created_at.desc(), Job.id).limit(limit))]


def command_line_sources(s: Session) -> list[Source]:
    """Active sources in no collection set of the web (made with `swath harvest create`)."""
    return list(s.scalars(select(Source).where(Source.deleted_at.is_(None),
                                               Source.collection_set_id.not_in(select(CollectionSet.id)))
                          .order_by(Source.created_at, Source.name)))


def get_collection(s: Session, user: User, source_id: str) -> tuple[Source, CollectionSet | None]:
    """A collection (source) `user` may see, with its set; admins also see sources the CLI made outside any set."""
    source = s.get(Source, source_id)
    if source is None or source.purge_after is not None:  # deleted (swath/purge.py): gone from the web
        raise NotFound(f"no collection {source_id!r}")
    row = s.get(CollectionSet, source.collection_set_id)
    if row is None and user.is_admin:
        return source, None
    if row is None:
        raise NotFound(f"no collection {source_id!r}")
    get_set(s, user, row.id)
    return source, row


# ---------------------------------------------------------------- history and export requesters


def log_change(s: Session, *, set_id: str, source_id: str | None, user: str, action: str, detail: str = "") -> None:
    s.add(Change(collection_set_id=set_id, source_id=source_id, user_name=user, action=action, detail=detail))


def changes(s: Session, *, set_id: str, source_id: str | None = None, limit: int = 50) -> list[Change]:
    query = select(Change).where(Change.collection_set_id == set_id)
    if source_id is not None:
        query = query.where(Change.source_id == source_id)
    return list(s.scalars(query.order_by(Change.at.desc(), Change.id.desc()).limit(limit)))


def add_export_request(s: Session, *, export_id: str, set_id: str, source_id: str | None, user: str) -> None:
    s.add(ExportRequest(export_id=export_id, collection_set_id=set_id, source_id=source_id, user_name=user))


def export_requests(s: Session, user: User, *, source_id: str | None = None, limit: int = 100,
                    offset: int = 0) -> list[tuple[Export, ExportRequest]]:
    """The exports asked for in the collection sets `user` sees, newest first; an admin's list (of no one
    collection) also has those asked on the command line, by "command line"."""
    query = _export_requests(s, user, select(Export, ExportRequest), source_id).order_by(
        Export.created_at.desc(), Export.id).offset(offset).limit(limit)
    return [(e, r or _command_line(e)) for e, r in s.execute(query)]


def count_export_requests(s: Session, user: User) -> int:
    return int(s.scalar(_export_requests(s, user, select(func.count(Export.id)), None)) or 0)


def _export_requests(s: Session, user: User, query: AnySelect, source_id: str | None) -> AnySelect:
    groups = visible_group_ids(s, user)
    everything = groups is None and source_id is None
    query = query.select_from(Export).join(ExportRequest, ExportRequest.export_id == Export.id, isouter=everything)
    if groups is not None:
        query = query.join(CollectionSet, CollectionSet.id == ExportRequest.collection_set_id).where(
            CollectionSet.group_id.in_(groups))
    if source_id is not None:
        query = query.where(ExportRequest.source_id == source_id)
    return query


def _command_line(export: Export) -> ExportRequest:
    """What the web says of an export asked for on the command line (not stored: there is no request row)."""
    return ExportRequest(export_id=export.id, collection_set_id="", source_id=None, user_name="command line",
                         requested_at=export.created_at)


def export_request(s: Session, user: User, export_id: str) -> tuple[Export, ExportRequest]:
    """An export asked for in the web application, if `user` may see its collection set."""
    request = s.get(ExportRequest, export_id)
    export = s.get(Export, export_id)
    if export is not None and request is None and user.is_admin:  # asked on the command line: admins see it
        return export, _command_line(export)
    if request is None or export is None:
        raise NotFound(f"no export {export_id!r}")
    get_set(s, user, request.collection_set_id)
    return export, request
