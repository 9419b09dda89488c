"""The web application's tables: accounts (users, groups, memberships), collection sets owned by a group,
server-side sessions, login attempts (throttling), the change history and who asked for each export.

A collection is a harvest source (swath/store/models.py `Source`): its `collection_set_id` names a row here.
Sources made with the CLI whose set has no row here are seen by admins only.
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Boolean, DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from swath.store.models import Base, utcnow


class Group(Base):
    __tablename__ = "web_groups"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class User(Base):
    __tablename__ = "web_users"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    password_hash: Mapped[str] = mapped_column(String(300))  # argon2id, with its parameters and salt
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    disabled_at: Mapped[dt.datetime | None] = mapped_column(DateTime)


class Membership(Base):
    __tablename__ = "web_memberships"

    user_id: Mapped[str] = mapped_column(ForeignKey("web_users.id", ondelete="CASCADE"), primary_key=True)
    group_id: Mapped[str] = mapped_column(ForeignKey("web_groups.id", ondelete="CASCADE"), primary_key=True)


class CollectionSet(Base):
    """SFM's collection set: a folder under collections/ (its id) that belongs to one group."""

    __tablename__ = "web_collection_sets"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)  # a safe_id: the folder name
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    group_id: Mapped[str] = mapped_column(ForeignKey("web_groups.id"), index=True)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    deactivated_at: Mapped[dt.datetime | None] = mapped_column(DateTime)
    purge_after: Mapped[dt.datetime | None] = mapped_column(DateTime)  # deleted: gone once its collections are


class WebSession(Base):
    """A login: the cookie holds a random token, this row its SHA-256, so a stolen database opens no session."""

    __tablename__ = "web_sessions"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(ForeignKey("web_users.id", ondelete="CASCADE"), index=True)
    csrf: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(DateTime)
    flash: Mapped[str | None] = mapped_column(Text)  # the server's message for the next page, shown once


class LoginAttempt(Base):
    __tablename__ = "web_login_attempts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), index=True)
    address: Mapped[str] = mapped_column(String(100), index=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class Change(Base):
    """SFM's change history: who changed what in a collection set or collection, and when."""

    __tablename__ = "web_changes"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    collection_set_id: Mapped[str] = mapped_column(String(100), index=True)
    source_id: Mapped[str | None] = mapped_column(String(32), index=True)
    user_name: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(60))
    detail: Mapped[str] = mapped_column(Text, default="")
    at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)


class ExportRequest(Base):
    """Who asked for an export from the web application, for which collection."""

    __tablename__ = "web_export_requests"

    export_id: Mapped[str] = mapped_column(String(200), primary_key=True)
    collection_set_id: Mapped[str] = mapped_column(String(100), index=True)
    source_id: Mapped[str | None] = mapped_column(String(32))
    user_name: Mapped[str] = mapped_column(String(100))
    requested_at: Mapped[dt.datetime] = mapped_column(DateTime, default=utcnow)
