"""Shared fixtures: a data root per test and a Config whose exchange and queues are unique per test,
so tests can share the one real RabbitMQ on this machine without seeing each other's messages."""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

import pytest

from swath.config import Config

def _find_fixtures() -> Path:
    """The shared real-data fixtures: $SWATH_SHARED_FIXTURES, else ../shared/fixtures beside this checkout,
    else the workplace copy (a CI clone may live elsewhere on this machine)."""
    candidates = [os.environ.get("SWATH_SHARED_FIXTURES", ""),
                  Path(__file__).resolve().parents[2] / "shared" / "fixtures",
                  "/work/shared/fixtures"]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return Path(candidates[1])


FIXTURES = _find_fixtures()
# Names of broker entities made by this test session start with this, so cleanup never touches
# another session's queues on the same broker.
SESSION_PREFIX = f"test_{uuid.uuid4().hex[:6]}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--runslow", action="store_true", help="also run the long variants marked slow")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--runslow"):
        return
    skip = pytest.mark.skip(reason="long variant: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def data_root(tmp_path: Path) -> Path:
    root = tmp_path / "data"
    root.mkdir()
    return root


@pytest.fixture
def config(data_root: Path) -> Config:
    """A Config on the real broker with a private exchange, dead-letter pair and queue prefix."""
    tag = f"{SESSION_PREFIX}_{uuid.uuid4().hex[:8]}"
    return dataclasses.replace(
        Config.from_env({}),
        data_root=data_root,
        exchange=tag,
        dead_letter_exchange=f"{tag}_dlx",
        dead_letter_queue=f"{tag}_dead",
        status_queue=f"{tag}_status",
        queue_prefix=f"{tag}_",
        status_interval=1.0,
        reconnect_max_delay=2.0,
        db_url=f"sqlite:///{data_root / 'swath.sqlite'}",
    )


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    assert FIXTURES.is_dir(), f"shared fixtures not found at {FIXTURES}"
    return FIXTURES


@pytest.fixture
def broker(config: Config):
    """A BrokerProbe on the real RabbitMQ, with this test's private exchange and queues declared."""
    from tests.brokerprobe import BrokerProbe

    probe = BrokerProbe(config)
    yield probe
    probe.close()


@pytest.fixture(scope="session", autouse=True)
def _remove_test_queues_at_end():
    yield
    try:
        from tests.brokerprobe import delete_test_entities

        delete_test_entities(SESSION_PREFIX)
    except Exception:  # cleanup only; a missing broker already failed the tests that needed it
        pass
