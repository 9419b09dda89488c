"""Passwords (argon2id), logins with throttling, server-side sessions.

A session cookie holds a random token; the store keeps its SHA-256 with the user, the expiry and the session's
CSRF token, so logging out or changing a password ends sessions at once (the row is gone).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import Store, web_repo
from swath.store.models import utcnow
from swath.store.repo import NotFound
from swath.store.web_models import User

COOKIE = "swath_session"
LIFETIME = dt.timedelta(hours=12)
MAX_FAILURES = 5  # failed logins per name or per address within WINDOW before logins are refused
WINDOW = dt.timedelta(minutes=15)
MIN_PASSWORD = 10
_hasher = PasswordHasher()  # argon2id with the library's RFC 9106 low-memory profile (64 MiB, 3 passes)


class LoginRefused(SwathError):
    """A wrong name or password (one message for both), or too many failures (throttled)."""

    code = codes.WEB_LOGIN_FAILED


@dataclass(frozen=True)
class Login:
    token: str
    user: User


def hash_password(password: str) -> str:
    if len(password) < MIN_PASSWORD:
        raise SwathError(f"a password has at least {MIN_PASSWORD} characters", code=codes.BAD_REQUEST)
    return _hasher.hash(password)


def verify_password(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


_DUMMY = _hasher.hash("swath: no such user, same work")  # an unknown name costs as much as a wrong password


def login(store: Store, *, name: str, password: str, address: str) -> Login:
    with store.session() as s:
        web_repo.prune(s, attempts_before=utcnow() - WINDOW)
        failures = web_repo.recent_failures(s, name=name, address=address, since=utcnow() - WINDOW)
    if failures >= MAX_FAILURES:
        raise LoginRefused(f"too many failed logins; try again in {int(WINDOW.total_seconds() // 60)} minutes",
                           code=codes.WEB_LOGIN_THROTTLED)
    with store.session() as s:  # the attempt is committed whatever the outcome: failures count
        user = web_repo.user_named(s, name)
        ok = verify_password(user.password_hash if user else _DUMMY, password) and user is not None
        web_repo.record_attempt(s, name=name, address=address, ok=ok)
        done = None
        if ok and user is not None:
            if _hasher.check_needs_rehash(user.password_hash):
                user.password_hash = _hasher.hash(password)
            token, _row = web_repo.open_session(s, user, lifetime=LIFETIME)
            done = Login(token=token, user=user)
    if done is None:
        raise LoginRefused("wrong user name or password")
    return done


def change_password(store: Store, *, user_id: str, old: str, new: str, keep_token: str) -> None:
    """Set a new password and end every other session of the user."""
    new_hash = hash_password(new)
    with store.session() as s:
        user = s.get(User, user_id)
        if user is None or not verify_password(user.password_hash, old):
            raise LoginRefused("the current password is wrong")
        user.password_hash = new_hash
        web_repo.close_sessions_of(s, user, keep=keep_token)


def reset_password(store: Store, *, user_id: str, new: str) -> User:
    """An admin sets another user's password: every session of that user ends."""
    new_hash = hash_password(new)
    with store.session() as s:
        user = s.get(User, user_id)
        if user is None:
            raise NotFound(f"no user {user_id!r}")
        user.password_hash = new_hash
        web_repo.close_sessions_of(s, user)
        return user


def add_user(store: Store, *, name: str, password: str, is_admin: bool, groups: list[str]) -> User:
    """A user (for `swath web adduser` and the admin page), in the named groups (created when missing)."""
    if not name.strip() or len(name) > 100:
        raise SwathError("a user name is 1 to 100 characters", code=codes.BAD_REQUEST)
    password_hash = hash_password(password)
    with store.session() as s:
        user = web_repo.add_user(s, name=name.strip(), password_hash=password_hash, is_admin=is_admin)
        for group in groups:
            web_repo.join(s, user, web_repo.group_named(s, group, create=True))
        return user
