"""Passwords (argon2id), logins with throttling, server-side sessions.

A session cookie holds a random token; the store keeps its SHA-256 with the user, the expiry and the session's
CSRF token, so logging out or changing a password ends sessions at once (the row is gone).

Each argon2 hash holds 64 MiB while it runs: at most `hash_slots` run at once in this process (the rest wait,
bounded, or get 429 web_busy), and a login is recorded as a failure before its password is checked, so
concurrent attempts all count against the throttle (docs/security.md "The web application").
"""

from __future__ import annotations

import datetime as dt
import os
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from starlette.requests import Request

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import Store, web_repo
from swath.store.models import utcnow
from swath.store.repo import NotFound
from swath.store.web_models import User
from swath.web.slots import Slots

COOKIE = "swath_session"
LIFETIME = dt.timedelta(hours=12)
MAX_FAILURES = 5  # failed logins per name or per address within WINDOW before logins are refused
WINDOW = dt.timedelta(minutes=15)
MIN_PASSWORD = 10
_hasher = PasswordHasher()  # argon2id with the library's RFC 9106 low-memory profile (64 MiB, 3 passes)
MAX_AUTO_SLOTS = 3  # auto, on any machine: 3 x 64 MiB keeps 30 logins at once under +300 MiB
MEMORY_PER_SLOT = 1024 ** 3  # auto: one slot per GiB of physical memory, so hashing takes at most 1/16 of it
WAITING_PER_SLOT = 8  # logins that may wait for a slot, per slot; more are refused at once


def secure(request: Request) -> bool:
    """Whether cookies are set `Secure`: as the Web says, or (None) when the request came over https."""
    web = request.app.state.web
    if web.secure_cookies is not None:
        return bool(web.secure_cookies)
    return request.url.scheme == "https" or request.headers.get("x-forwarded-proto") == "https"


def hash_slots(cores: int | None = None, memory: int | None = None) -> int:
    """Hashes at once by default: one per core, one per GiB of memory, at most MAX_AUTO_SLOTS, at least 1."""
    cores = cores or os.cpu_count() or 1
    if memory is None:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    return max(1, min(cores, memory // MEMORY_PER_SLOT, MAX_AUTO_SLOTS))


def _slots(size: int, wait: float) -> Slots:
    return Slots(size=size, wait=wait, queue=WAITING_PER_SLOT * size, what="logins")


_hashing = _slots(hash_slots(), 10.0)


def limit_hashing(*, slots: int, wait: float) -> None:
    """This process's hashing slots (Config.web_hash_slots, 0: hash_slots(); web_hash_wait); create_app sets them."""
    global _hashing
    _hashing = _slots(slots or hash_slots(), wait)


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
    with _hashing.held():
        return _hasher.hash(password)


def verify_password(stored: str, password: str) -> bool:
    """Raises slots.Busy when every hashing slot stayed taken."""
    with _hashing.held():
        return _verify(stored, password)


def _verify(stored: str, password: str) -> bool:
    try:
        return _hasher.verify(stored, password)
    except (VerificationError, InvalidHashError):
        return False


_DUMMY = _hasher.hash("swath: no such user, same work")  # an unknown name costs as much as a wrong password


def login(store: Store, *, name: str, password: str, address: str) -> Login:
    """Raises LoginRefused (wrong, or throttled) or slots.Busy. The attempt takes a hashing slot first, so at
    most that many attempts are ever in flight, then is recorded as a failure before its password is checked:
    concurrent attempts all count, and the throttle checks at most MAX_FAILURES per name or address."""
    with _hashing.held():
        attempt = _counted_attempt(store, name=name, address=address)
        with store.session() as s:
            user = web_repo.user_named(s, name)
            stored, user_id = (user.password_hash, user.id) if user else (_DUMMY, None)
        # outside any transaction: a hash takes a while and must not hold the store
        ok = _verify(stored, password) and user_id is not None
        new_hash = _hasher.hash(password) if ok and _hasher.check_needs_rehash(stored) else None
    if not ok:
        raise LoginRefused("wrong user name or password")
    with store.session() as s:
        web_repo.attempt_succeeded(s, attempt)
        user = s.get(User, user_id)
        if user is None:
            raise LoginRefused("wrong user name or password")
        if new_hash:
            user.password_hash = new_hash
        token, _row = web_repo.open_session(s, user, lifetime=LIFETIME)
        return Login(token=token, user=user)


def _counted_attempt(store: Store, *, name: str, address: str) -> int:
    """Record the attempt as a failed one and return its id, or raise LoginRefused (throttled)."""
    since = utcnow() - WINDOW
    with store.session() as s:  # committed before anything is checked
        web_repo.prune(s, attempts_before=since)
        attempt = web_repo.record_attempt(s, name=name, address=address, ok=False)
    with store.session() as s:  # a new transaction: it sees every attempt committed before this one's
        failures = web_repo.recent_failures(s, name=name, address=address, since=since)
    if failures > MAX_FAILURES:  # this attempt counted: the ones before it reached the limit
        with store.session() as s:  # a refused attempt is not a failure: the lock-out runs from the last one
            web_repo.forget_attempt(s, attempt)
        raise LoginRefused(f"too many failed logins; try again in {int(WINDOW.total_seconds() // 60)} minutes",
                           code=codes.WEB_LOGIN_THROTTLED)
    return attempt


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
