"""Helpers shared by the requester, store, monitor, scheduler and dashboard tests (no tests here).

PostgreSQL: one private database per test session on 127.0.0.1:5432, dropped at the end; each test
that uses it starts from empty tables.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from sqlalchemy import create_engine, text

from swath.core.config import Config
from swath.messages.worker import ServiceSpec, Worker, wait_for
from swath.store import Store
from swath.store.models import Base
from swath.store.secrets import generate_key

PG_ADMIN_URL = "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
# the key the CLI of these tests seals stored credential values with: new for each test session
TEST_SECRET_KEY = generate_key()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    with fresh_database() as url:
        yield url


@contextlib.contextmanager
def fresh_database(prefix: str = "swath_test") -> Iterator[str]:
    """A PostgreSQL database made for the caller, dropped when it is done."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+psycopg2://postgres@127.0.0.1:5432/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def empty_tables(url: str) -> None:
    store = Store(url=url)
    with store.engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            conn.execute(table.delete())
    store.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, config: Config) -> str:
    if request.param == "sqlite":
        return config.db_url
    url = request.getfixturevalue("pg_url")
    empty_tables(url)
    return url


@pytest.fixture
def store(db_url: str) -> Iterator[Store]:
    store = Store(url=db_url)
    yield store
    store.close()


def cli_env(config: Config) -> dict[str, str]:
    """The environment that makes `swath` use this test's private broker names, data root and store."""
    return {
        "SWATH_AMQP_URL": config.amqp_url, "SWATH_EXCHANGE": config.exchange,
        "SWATH_DEAD_LETTER_EXCHANGE": config.dead_letter_exchange,
        "SWATH_DEAD_LETTER_QUEUE": config.dead_letter_queue, "SWATH_STATUS_QUEUE": config.status_queue,
        "SWATH_QUEUE_PREFIX": config.queue_prefix, "SWATH_DATA_ROOT": str(config.data_root),
        "SWATH_DB_URL": config.db_url, "SWATH_SECRET_KEY": TEST_SECRET_KEY,
        "SWATH_DELIVERY_LIMIT": str(config.delivery_limit),
    }


def swath(config: Config, *args: str, env: dict[str, str] | None = None, expect: int | None = 0) -> Any:
    """Run `swath ARGS` in-process; returns parsed JSON when --json was given, else the result."""
    from swath.cli import cli

    result = CliRunner().invoke(cli, ["--log-level", "WARNING", *args], env={**cli_env(config), **(env or {})},
                                catch_exceptions=False)
    if expect is not None:
        assert result.exit_code == expect, f"swath {' '.join(args)} -> {result.exit_code}\n{result.output}"
    if "--json" in args:
        return orjson.loads(result.stdout)
    return result


@contextlib.contextmanager
def running(worker: Worker) -> Iterator[Worker]:
    """Run a worker (or the monitor) in a thread until the block ends."""
    thread = threading.Thread(target=worker.run, daemon=True, name=f"test-{worker.spec.name}")
    thread.start()
    try:
        assert wait_for(worker.consuming.is_set, 120), f"{worker.spec.name} did not start consuming"
        yield worker
    finally:
        worker.request_shutdown()
        thread.join(120)
        assert not thread.is_alive(), f"{worker.spec.name} did not shut down within 120 s"


def spec_named(name: str) -> ServiceSpec:
    from swath.services import service

    return service(name)
