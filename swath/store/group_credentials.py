"""Credentials as objects of a group: a named set of values (sealed with the store's SecretBox, as a source's
stored values are), used by reference from any collection of that group, rotated in one place.

A source names one as `credential:<id>` in its `credentials` (beside `env:VAR` and `stored`); the value is
opened only when a harvest.start is built, and only for a source of the credential's own group.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

from sqlalchemy import DateTime, ForeignKey, String, Text, UniqueConstraint, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from swath.store import repo
from swath.store.models import Base, Source, utcnow
from swath.store.repo import Conflict, NotFound, new_id
from swath.store.secrets import SecretBox
from swath.store.web_models import CollectionSet, User
from swath.store.web_repo import only_visible, sees

PREFIX = "credential:"  # a source's reference to a group credential: credential:<id>


class GroupCredential(Base):
    __tablename__ = "web_credentials"
    __table_args__ = (UniqueConstraint("group_id", "name", name="uq_web_credentials_group_name"),)

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("web_groups.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    platform: Mapped[str] = mapped_column(String(100))  # whose harvest types it is for (their credential names)
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    rotated_at: Mapped[dt.datetime | None] = mapped_column(DateTime)


class GroupCredentialValue(Base):
    """One value of a group credential (api_key, secret, ...), sealed; replaced whole on rotation."""

    __tablename__ = "web_credential_values"

    credential_id: Mapped[str] = mapped_column(ForeignKey("web_credentials.id", ondelete="CASCADE"),
                                               primary_key=True)
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    scheme: Mapped[str] = mapped_column(String(20))
    value: Mapped[str] = mapped_column(Text)  # a Fernet token


def reference(credential_id: str) -> str:
    return PREFIX + credential_id


def referenced(source: Source) -> set[str]:
    """The ids of the group credentials a source uses."""
    return {ref[len(PREFIX):] for ref in source.credentials.values() if isinstance(ref, str) and ref.startswith(PREFIX)}


def _seal(s: Session, credential: GroupCredential, values: Mapping[str, str], box: SecretBox) -> None:
    for name, value in values.items():
        scheme, text = box.seal(value, what=f"credential {credential.name!r} ({name})")
        s.merge(GroupCredentialValue(credential_id=credential.id, name=name, scheme=scheme, value=text))


def add(s: Session, *, group_id: str, name: str, platform: str, values: Mapping[str, str], box: SecretBox,
        user: str) -> GroupCredential:
    if not values:
        raise Conflict("a credential needs its values")
    if s.scalar(select(GroupCredential.id).where(GroupCredential.group_id == group_id,
                                                 GroupCredential.name == name)) is not None:
        raise Conflict(f"your group has a credential named {name!r} already; choose another name")
    box.require(f"credential {name!r}")  # before anything is added
    row = GroupCredential(id=new_id(), group_id=group_id, name=name, platform=platform, created_by=user)
    s.add(row)
    s.flush()
    _seal(s, row, values, box)
    return row


def rotate(s: Session, credential: GroupCredential, values: Mapping[str, str], box: SecretBox) -> None:
    """New values replace the old ones (every name given again: a name left out would keep an old value)."""
    if set(values) != set(value_names(s, credential)):
        raise Conflict(f"give every value of {credential.name!r} again: {', '.join(value_names(s, credential))}")
    _seal(s, credential, values, box)
    credential.rotated_at = utcnow()


def value_names(s: Session, credential: GroupCredential) -> list[str]:
    return list(s.scalars(select(GroupCredentialValue.name).where(
        GroupCredentialValue.credential_id == credential.id).order_by(GroupCredentialValue.name)))


def of_user(s: Session, user: User) -> list[GroupCredential]:
    query = select(GroupCredential).order_by(GroupCredential.name)
    return list(s.scalars(only_visible(s, user, query, GroupCredential.group_id)))


def of_group(s: Session, group_id: str) -> list[GroupCredential]:
    return list(s.scalars(select(GroupCredential).where(GroupCredential.group_id == group_id)
                          .order_by(GroupCredential.name)))


def get(s: Session, user: User, credential_id: str) -> GroupCredential:
    """The credential if `user` may see it; NotFound as for one that does not exist."""
    row = s.get(GroupCredential, credential_id)
    if row is None or not sees(s, user, row.group_id):
        raise NotFound(f"no credential {credential_id!r}")
    return row


def for_set(s: Session, credential_id: str, set_id: str) -> GroupCredential:
    """The credential if it belongs to the group owning collection set `set_id`; NotFound otherwise."""
    row = s.get(GroupCredential, credential_id)
    owner = s.scalar(select(CollectionSet.group_id).where(CollectionSet.id == set_id))
    if row is None or owner is None or row.group_id != owner:
        raise NotFound(f"no credential {credential_id!r}")
    return row


def users_of(s: Session, credential: GroupCredential) -> list[Source]:
    """The collections (sources) of its group that use it, deactivated ones too."""
    sets = select(CollectionSet.id).where(CollectionSet.group_id == credential.group_id)
    candidates = s.scalars(select(Source).where(Source.collection_set_id.in_(sets)).order_by(Source.name))
    return [src for src in candidates if credential.id in referenced(src)]


def reseal(s: Session, box: SecretBox, counts: dict[str, int]) -> None:
    """`swath secrets migrate` for group credentials: each value under the newest key, added to `counts`."""
    for row, name in s.execute(select(GroupCredentialValue, GroupCredential.name).join(
            GroupCredential, GroupCredential.id == GroupCredentialValue.credential_id)):
        repo.reseal_row(row, box, counts, what=f"credential {name!r} ({row.name})")


def values_for(s: Session, source: Source, box: SecretBox) -> dict[str, str]:
    """Credential name -> value for the source's `credential:` references, opened with `box` (never log them);
    a credential of another group, or gone, gives no value."""
    out: dict[str, str] = {}
    for name, ref in source.credentials.items():
        if not (isinstance(ref, str) and ref.startswith(PREFIX)):
            continue
        try:
            credential = for_set(s, ref[len(PREFIX):], source.collection_set_id)
        except NotFound:
            continue
        row = s.get(GroupCredentialValue, (credential.id, name))
        if row is not None:
            out[name] = box.open(row.scheme, row.value, what=f"credential {credential.name!r} ({name})")
    return out
