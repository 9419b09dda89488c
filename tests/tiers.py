"""The test tiers (no tests here): which tests need a service (RabbitMQ, PostgreSQL, a dbus-daemon), and a
guard that fails any other test that reaches the broker or the database anyway. tests/conftest.py wires both
in; `dev/test-fast` runs the tests that need no service, `dev/test` runs everything."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

MARK = "services"
# Fixtures that reach a service; a test's fixture closure holds them however indirectly it asks for them.
SERVICE_FIXTURES = {"broker": "RabbitMQ", "pg_url": "PostgreSQL", "bus": "a dbus-daemon"}
# Helpers that always reach RabbitMQ (worker subprocesses, a consuming requester, queues declared up front):
# every test of a module that imports one runs through the broker.
BROKER_HELPERS = frozenset({("tests.reliability.kit", "WorkerProcess"), ("tests.reliability.kit", "Collector"),
                            ("tests.reliability.kit", "declare_queues"), ("tests.reliability.load", "drain")})
# RabbitMQ (AMQP, management API) and PostgreSQL on this machine.
SERVICE_PORTS = {5672: "RabbitMQ", 15672: "RabbitMQ management", 5432: "PostgreSQL"}


def needed_service(item: pytest.Item) -> str | None:
    """The service `item` needs, or None when it runs with every service stopped."""
    fixtures = set(getattr(item, "fixturenames", ()))
    for fixture, service in SERVICE_FIXTURES.items():
        if fixture in fixtures:
            return service
    callspec = getattr(item, "callspec", None)
    # tests.requesterkit's db_url asks for pg_url only at run time, for its "postgresql" parameter.
    if callspec is not None and callspec.params.get("db_url") == "postgresql":
        return "PostgreSQL"
    module = getattr(item, "module", None)
    for value in vars(module).values() if module is not None else ():
        if (getattr(value, "__module__", None), getattr(value, "__qualname__", None)) in BROKER_HELPERS:
            return "RabbitMQ"
    return None


def has_service_tests(session: pytest.Session) -> bool:
    return any(item.get_closest_marker(MARK) for item in session.items)


class ServiceGuard:
    """While installed, refuses (and remembers) every connection to the broker, the database or a D-Bus socket
    made in this process; subprocesses are out of its reach (dev/test-fast-isolated covers those)."""

    def __init__(self) -> None:
        self._attempts: list[str] = []
        self._lock = threading.Lock()  # workers under test connect from their own threads

    def take(self) -> list[str]:
        """The refused attempts since the last call."""
        with self._lock:
            attempts, self._attempts = self._attempts, []
        return attempts

    def _refuse(self, what: str) -> None:
        with self._lock:
            self._attempts.append(what)
        raise ConnectionRefusedError(f"{what} refused: this test is not marked '{MARK}' (see tests/tiers.py)")

    def _check(self, address: Any) -> None:
        if isinstance(address, tuple) and len(address) >= 2 and address[1] in SERVICE_PORTS:
            self._refuse(f"{SERVICE_PORTS[address[1]]} at {address[0]}:{address[1]}")
        if isinstance(address, (str, bytes)) and "dbus" in os.fsdecode(address):  # a unix socket path
            self._refuse(f"D-Bus at {address!r}")

    @contextlib.contextmanager
    def installed(self) -> Iterator[ServiceGuard]:
        import psycopg2  # SQLAlchemy looks psycopg2.connect up on every connect, so patching the module holds

        connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            self._check(address)
            return connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            self._check(address)
            return connect_ex(sock, address)

        def guarded_pg_connect(*args: Any, **kwargs: Any) -> Any:
            self._refuse("PostgreSQL (psycopg2.connect)")

        patch = pytest.MonkeyPatch()
        patch.setattr(socket.socket, "connect", guarded_connect)
        patch.setattr(socket.socket, "connect_ex", guarded_connect_ex)
        patch.setattr(psycopg2, "connect", guarded_pg_connect)
        try:
            yield self
        finally:
            patch.undo()
