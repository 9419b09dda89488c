"""Open the store (SQLite file under the data root by default, PostgreSQL by SWATH_DB_URL) and migrate it."""

from __future__ import annotations

import importlib.util
import logging
import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import DBAPIError, SQLAlchemyError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry

from swath.core.errors import SwathError

MIGRATIONS = Path(__file__).with_name("migrations")
_migrated: set[str] = set()
log = logging.getLogger(__name__)
# alembic narrates every context at INFO; the store says itself when it migrates
logging.getLogger("alembic").setLevel(logging.WARNING)
_lock = threading.Lock()


class StoreError(SwathError):
    """The store cannot be opened or migrated."""


def alembic_config() -> AlembicConfig:
    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    return cfg


def private_sqlite_file(path: Path) -> None:
    """Create the store's file (and its folder, if missing) for the owner alone: it holds credential
    references and sealed values. SQLite gives its -wal and -shm files the same mode."""
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:  # made by an older swath (0644) or by hand
        log.info("store file %s was mode %04o; setting 0600", path, mode)
        path.chmod(0o600)


def installed_driver(url: str) -> str:
    """`postgresql://` names no driver: SQLAlchemy 2.1 then wants psycopg (3); use the one installed (swath
    depends on psycopg2), so the URL people write works. Any URL naming its driver is left as it is."""
    parsed = make_url(url)
    if parsed.drivername != "postgresql" or importlib.util.find_spec("psycopg") is not None:
        return url
    return parsed.set(drivername="postgresql+psycopg2").render_as_string(hide_password=False)


def make_engine(url: str) -> Engine:
    """hide_parameters: a database error or SQL echo never prints a row's values (sealed credentials included)."""
    url = installed_driver(url)
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        if parsed.database and parsed.database != ":memory:" and not parsed.database.startswith("file:"):
            private_sqlite_file(Path(parsed.database))
        # the monitor, scheduler and CLI share one file: wait for the writer instead of failing
        engine = create_engine(url, connect_args={"timeout": 30}, hide_parameters=True)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA secure_delete=ON")  # a replaced or deleted secret leaves no copy in free space
            cursor.close()

        return engine
    return create_engine(url, pool_pre_ping=True, hide_parameters=True)


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest revision (idempotent; runs once per engine URL per process)."""
    key = engine.url.render_as_string(hide_password=False)
    with _lock:
        if key in _migrated:
            return
        cfg = alembic_config()
        head = ScriptDirectory.from_config(cfg).get_current_head()
        with engine.begin() as connection:
            current = MigrationContext.configure(connection).get_current_revision()
            if current != head:
                log.info("migrating the store from %s to %s", current or "empty", head)
                cfg.attributes["connection"] = connection
                command.upgrade(cfg, "head")
        _migrated.add(key)


class Store:
    """An engine plus a session factory; `session()` is one transaction."""

    def __init__(self, *, url: str, migrate: bool = True) -> None:
        self.url = url
        try:
            self.engine = make_engine(url)
            if migrate:
                upgrade(self.engine)
        except Exception as exc:
            from swath.store.dberrors import classify  # one line with a code: refused, missing, unreachable

            safe = make_url(url).render_as_string(hide_password=True)
            code, line = classify(exc)
            raise StoreError(f"cannot open the store at {safe}: {line}", code=code) from None
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session whose work commits when the block ends, or rolls back on an exception."""
        with self._sessions.begin() as session:
            yield session

    def scrub(self) -> None:
        """Rewrite the store so values replaced earlier leave no old copy on disk (after `secrets migrate`):
        SQLite is vacuumed and its WAL truncated; PostgreSQL's `secrets` table is rewritten (VACUUM FULL)."""
        try:
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                if self.dialect == "sqlite":
                    conn.exec_driver_sql("VACUUM")
                    conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
                else:
                    conn.exec_driver_sql("VACUUM FULL secrets")
        except SQLAlchemyError as exc:  # e.g. a PostgreSQL user that does not own the table
            reason = exc.orig if isinstance(exc, DBAPIError) else exc
            raise StoreError(f"the values are re-encrypted, but rewriting the store's files failed "
                             f"({type(exc).__name__}: {reason}); old copies may remain until "
                             "the table owner runs VACUUM FULL secrets (PostgreSQL) or VACUUM (SQLite)") from None

    def close(self) -> None:
        self.engine.dispose()
