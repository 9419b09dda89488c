"""One runner per harvest without a shared filesystem: a PostgreSQL session-level advisory lock per harvest id,
held by the runner's own connection, with a fencing token.

The lock is `pg_try_advisory_lock(key)` (key: 64 bits of a hash of the harvest id) on a connection opened for
this claim alone (no pool can hand it to anyone else). The server drops the lock when that connection ends:
at once when the runner's process dies on a live host (its socket is closed), within about 40 s when its host
or network goes (TCP keepalives both ways, `tcp_user_timeout`). Each acquisition adds one to the harvest's row
in `harvest_claims` (the fencing token) in a transaction taken under the lock, and names the holder there.
`fence_check` refuses a write whose token is no longer the newest (`claim_fenced`): the store's state commits
run it in their own transaction; an upload to object storage runs it before it is announced. See
docs/reliability.md "Without a shared filesystem".
"""

from __future__ import annotations

import hashlib
import os
import threading

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from swath.core.errors import SwathError
from swath.harvesters.claims import ClaimFenced, ClaimLost, wait_to_acquire
from swath.messages import codes
from swath.store.db import installed_driver
from swath.store.dberrors import classify

# libpq's side: notice a dead server (or a cut network) within ~40 s rather than the kernel's two hours
CLIENT_KEEPALIVES = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5, "keepalives_count": 3,
                     "tcp_user_timeout": 30_000, "connect_timeout": 10}
# the server's side: a holder whose host vanished is dropped (its lock freed) after ~25 s of silence; no query
# of the claim's may hang the runner
SESSION_SETTINGS = ("SET tcp_keepalives_idle = 10", "SET tcp_keepalives_interval = 5",
                    "SET tcp_keepalives_count = 3", "SET statement_timeout = '30s'",
                    "SET idle_in_transaction_session_timeout = '1min'")
_TAKE = text("""
    INSERT INTO harvest_claims (harvest_id, token, host, pid, instance, acquired_at)
    VALUES (:id, 1, :host, :pid, :instance, now() AT TIME ZONE 'utc')
    ON CONFLICT (harvest_id) DO UPDATE SET token = harvest_claims.token + 1, host = excluded.host,
        pid = excluded.pid, instance = excluded.instance, acquired_at = excluded.acquired_at
    RETURNING token""")
# a bigint advisory lock shows in pg_locks as classid (high 32 bits), objid (low 32 bits), objsubid 1
_HELD = text("""
    SELECT (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
                AND objsubid = 1 AND classid::bigint = :hi AND objid::bigint = :lo),
           (SELECT token FROM harvest_claims WHERE harvest_id = :id)""")


class ClaimStoreUnavailable(SwathError):
    """The store that holds claims and state cannot be reached or used."""

    code = codes.CLAIM_STORE_UNAVAILABLE


def lock_key(harvest_id: str) -> int:
    """The advisory lock's key: stable across hosts, versions and Python's hash seed."""
    digest = hashlib.blake2b(f"swath-harvest:{harvest_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def fence_check(harvest_id: str, token: int, *, connection: Connection) -> None:
    """Raise ClaimFenced (`claim_fenced`) unless `token` is still the newest of `harvest_id`. Run it inside the
    transaction that writes: the row stays share-locked until it ends, so no new runner slips in between."""
    newest = connection.execute(text("SELECT token FROM harvest_claims WHERE harvest_id = :id FOR SHARE"),
                                {"id": harvest_id}).scalar()
    if newest is None or newest > token:
        raise ClaimFenced(f"harvest {harvest_id}: a newer runner holds its claim (token {newest}, this runner's "
                          f"{token}); this runner's write is refused")


def unavailable(exc: BaseException, what: str) -> ClaimStoreUnavailable:
    _code, line = classify(exc)
    return ClaimStoreUnavailable(f"{what}: the store (SWATH_DB_URL) failed: {line}")


class PgClaim:
    """The right to run one harvest id (harvesters.claims.Claim), as a PostgreSQL advisory lock. `token` is
    this runner's fencing token while it holds the claim, else None. Safe from any thread."""

    def __init__(self, *, url: str, harvest_id: str, host: str, instance: str) -> None:
        self.url = url
        self.harvest_id = harvest_id
        self.host = host
        self.instance = instance
        self.key = lock_key(harvest_id)
        self.token: int | None = None
        self._engine: Engine | None = None
        self._conn: Connection | None = None
        self._mutex = threading.Lock()  # one connection, used from the writer thread and the job's

    def _connection(self) -> Connection:
        if self._conn is None:
            parsed = installed_driver(make_url(self.url))
            libpq = parsed.get_dialect().driver in ("psycopg2", "psycopg")
            args: dict[str, object] = dict(CLIENT_KEEPALIVES) if libpq else {}
            if libpq:  # pg_stat_activity shows which harvest a connection holds
                args["application_name"] = f"swath claim {self.harvest_id}"[:63]
            # NullPool: the connection is this claim's alone and closing it really ends the session (and the lock)
            self._engine = create_engine(parsed, poolclass=NullPool, connect_args=args, hide_parameters=True)
            conn = self._engine.connect()
            for setting in SESSION_SETTINGS:
                conn.exec_driver_sql(setting)
            if int(conn.exec_driver_sql("SHOW server_version_num").scalar_one()) >= 140000:
                # the claim's session is idle while its harvest runs: a site-wide idle_session_timeout must not end it
                conn.exec_driver_sql("SET idle_session_timeout = 0")
            conn.commit()
            self._conn = conn
        return self._conn

    def holder(self) -> str:
        """Who took the claim last, as its holder wrote it (for log lines)."""
        try:
            with self._mutex:
                conn = self._connection()
                row = conn.execute(text("SELECT host, pid, instance FROM harvest_claims WHERE harvest_id = :id"),
                                   {"id": self.harvest_id}).first()
                conn.commit()
        except SQLAlchemyError:
            return "another process"
        return "another process" if row is None else f"pid {row.pid} on {row.host} (worker {row.instance})"

    def try_acquire(self) -> bool:
        """Take the claim if it is free (and a new fencing token with it); False if another session holds it."""
        with self._mutex:
            if self.token is not None:
                return True
            try:
                conn = self._connection()
                got = conn.execute(text("SELECT pg_try_advisory_lock(:key)"), {"key": self.key}).scalar()
                conn.commit()
                if not got:
                    return False
                try:
                    self.token = conn.execute(_TAKE, {"id": self.harvest_id, "host": self.host, "pid": os.getpid(),
                                                      "instance": self.instance}).scalar_one()
                    conn.commit()
                except BaseException:
                    self._close()  # ends the session: the lock goes with it
                    raise
            except SQLAlchemyError as exc:
                self._close()
                raise unavailable(exc, f"cannot take the claim on harvest {self.harvest_id}") from None
            return True

    def acquire(self, *, give_up: threading.Event) -> bool:
        return wait_to_acquire(self, give_up)

    def check(self) -> None:
        """Before an irreversible step: this session still holds the lock and its token is the newest
        (ClaimFenced if not); a connection that failed is a claim lost (its lock is gone with it)."""
        with self._mutex:
            if self.token is None or self._conn is None:
                raise ClaimLost(f"the claim on harvest {self.harvest_id} is not held")
            try:
                held, newest = self._conn.execute(_HELD, {"hi": (self.key >> 32) & 0xFFFFFFFF,
                                                          "lo": self.key & 0xFFFFFFFF, "id": self.harvest_id}).one()
                self._conn.commit()
            except SQLAlchemyError as exc:
                raise ClaimLost(f"the claim on harvest {self.harvest_id} was lost with its connection to the "
                                f"store: {classify(exc)[1]}") from None
            if newest is None or newest > self.token:
                raise ClaimFenced(f"harvest {self.harvest_id}: a newer runner holds its claim (token {newest}, "
                                  f"this runner's {self.token})")
            if not held:
                raise ClaimLost(f"the claim on harvest {self.harvest_id} is no longer held by this runner")

    def release(self) -> None:
        with self._mutex:
            if self._conn is not None and self.token is not None:
                try:
                    self._conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": self.key})
                    self._conn.commit()
                except SQLAlchemyError:
                    pass  # closing the connection below drops the lock all the same
            self._close()

    def _close(self) -> None:
        self.token = None
        conn, self._conn = self._conn, None
        engine, self._engine = self._engine, None
        try:
            if conn is not None:
                conn.close()
        except SQLAlchemyError:
            pass  # a connection already broken is closed enough
        if engine is not None:
            engine.dispose()
