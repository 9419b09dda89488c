"""The fast tier stays honest: the guard refuses the broker and the database (and lets local HTTP through),
and `-m "not services"` (dev/test-fast) leaves out every test that needs a service."""

from __future__ import annotations

import ast
import re
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pika
import pika.exceptions
import psycopg2
import pytest

from swath.core.config import Config
from tests.fakes.httpserver import FakeServer, Response
from tests.tiers import ServiceGuard

ROOT = Path(__file__).resolve().parents[1]
# Fixtures that open a broker channel, create a PostgreSQL database or start a dbus-daemon, by name.
SERVICE_ARGS = {"broker", "pg_url", "bus", "bus_config", "serve"}
# Every test here runs worker subprocesses on the broker (through fixtures or helpers, not by argument).
WORKER_MODULES = {"tests/reliability/test_crash.py", "tests/reliability/test_hostile.py",
                  "tests/reliability/test_load.py", "tests/reliability/test_redelivery.py"}


def test_guard_refuses_the_broker_and_the_database_and_lets_local_http_through() -> None:
    server = FakeServer({"/ok": lambda req: Response(200, b"ok")})
    before = socket.socket.connect
    guard = ServiceGuard()
    with server, guard.installed():
        assert urllib.request.urlopen(server.url + "/ok", timeout=10).read() == b"ok"
        assert guard.take() == []
        with pytest.raises(pika.exceptions.AMQPConnectionError):
            pika.BlockingConnection(pika.URLParameters(Config.from_env({}).amqp_url))
        with pytest.raises(ConnectionRefusedError):
            psycopg2.connect("postgresql://postgres@127.0.0.1:5432/postgres")
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", 5432), timeout=5)
        reached = guard.take()
    assert socket.socket.connect is before  # uninstalled
    assert reached and all(":5672" in r for r in reached if r.startswith("RabbitMQ"))
    assert any(r.startswith("RabbitMQ") for r in reached)
    assert reached.count("PostgreSQL (psycopg2.connect)") == 1 and "PostgreSQL at 127.0.0.1:5432" in reached


def service_tests_by_argument() -> set[str]:
    """`file::test` of every test function that names a service fixture among its arguments."""
    found = set()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
                if SERVICE_ARGS & {a.arg for a in node.args.args}:
                    found.add(f"{path.relative_to(ROOT)}::{node.name}")
    return found


def test_the_fast_tier_leaves_out_every_test_that_needs_a_service() -> None:
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                          "-m", "not services", "tests"], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    fast = [line for line in out.stdout.splitlines() if "::" in line]
    counts = re.search(r"(\d+)(?:/(\d+))? tests? collected", out.stdout)
    kept, total = int(counts[1]), int(counts[2] or counts[1])
    functions = {nodeid.partition("[")[0] for nodeid in fast}
    assert "tests/test_tiers.py::test_the_fast_tier_leaves_out_every_test_that_needs_a_service" in functions
    assert not functions & service_tests_by_argument()
    assert not [n for n in fast if n.split("::")[0] in WORKER_MODULES]
    assert not [n for n in fast if n.endswith("[postgresql]")]  # db_url's PostgreSQL half
    assert [n for n in fast if n.endswith("[sqlite]")]  # ... and its SQLite half stays
    assert kept == len(fast) and 0 < total - kept < kept  # most tests need no service
