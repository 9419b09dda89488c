"""Shared fixtures: a data root per test and a Config whose exchange and queues are unique per test,
so tests can share the one real RabbitMQ on this machine without seeing each other's messages."""

from __future__ import annotations

import dataclasses
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from swath.core.config import Config

# One replayable seed for everything random (SWATH_TEST_SEED), and the Hypothesis profiles: hooks and fixture.
from tests.seeds import (  # noqa: F401
    pytest_configure,
    pytest_report_header,
    pytest_runtest_makereport,
    pytest_terminal_summary,
    swath_seed,
)
from tests.tiers import ServiceGuard, has_service_tests, needed_service


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


@pytest.hookimpl(tryfirst=True)  # before pytest's own hook deselects by -m, so -m "not services" sees the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        service = needed_service(item)
        if service is not None:
            item.add_marker(pytest.mark.services(service))
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
def config(data_root: Path, request: pytest.FixtureRequest) -> Iterator[Config]:
    """A Config on the real broker with a private exchange, dead-letter pair and queue prefix."""
    tag = f"{SESSION_PREFIX}_{uuid.uuid4().hex[:8]}"
    yield dataclasses.replace(
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
    if request.node.get_closest_marker("services") is not None:
        # quorum queues are Raft groups on the shared broker: drop this test's now, not at the session's end
        from tests.brokerprobe import delete_queues_of

        delete_queues_of(tag)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    assert FIXTURES.is_dir(), f"shared fixtures not found at {FIXTURES}"
    return FIXTURES


@pytest.fixture(scope="session")
def seaweed(tmp_path_factory: pytest.TempPathFactory):
    """One real SeaweedFS (S3 API on a free port of 127.0.0.1) for the session; tests/seaweed.py. A test that
    stops its volume server starts its own with `Seaweed.start` instead."""
    from tests.seaweed import Seaweed

    server = Seaweed.start(tmp_path_factory.mktemp("seaweed"))
    yield server
    server.stop()


@pytest.fixture
def s3_config(config: Config, seaweed) -> Config:
    """`config` with its WARCs in a fresh bucket of the session's SeaweedFS (under a prefix, as a site would)."""
    from tests.seaweed import ACCESS_KEY, SECRET_KEY

    return dataclasses.replace(config, storage_url=f"s3://{seaweed.new_bucket()}/archive",
                               storage_endpoint=seaweed.endpoint, storage_access_key_id=ACCESS_KEY,
                               storage_secret_access_key=SECRET_KEY)


@pytest.fixture
def broker(config: Config):
    """A BrokerProbe on the real RabbitMQ, with this test's private exchange and queues declared."""
    from tests.brokerprobe import BrokerProbe

    probe = BrokerProbe(config)
    yield probe
    probe.close()


@pytest.fixture(scope="session", autouse=True)
def _service_guard(request: pytest.FixtureRequest) -> Iterator[ServiceGuard | None]:
    """With no test marked services in this session (the fast tier), refuse the broker and the database."""
    if has_service_tests(request.session):
        yield None
        return
    guard = ServiceGuard()
    with guard.installed():
        yield guard


@pytest.fixture(autouse=True)
def _no_services_unless_marked(_service_guard: ServiceGuard | None, request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a fast-tier test that reached a service, even when the code under test swallowed the refusal."""
    yield
    reached = _service_guard.take() if _service_guard is not None else []
    if reached:
        pytest.fail(f"{request.node.nodeid} reached {'; '.join(sorted(set(reached)))} but is not marked "
                    "'services': give it a service fixture or teach tests/tiers.py why it needs one")


@pytest.fixture(scope="session", autouse=True)
def _remove_test_queues_at_end(request: pytest.FixtureRequest):
    yield
    if not has_service_tests(request.session):
        return  # no test here reached the broker, so it holds nothing of this session's
    try:
        from tests.brokerprobe import delete_test_entities

        delete_test_entities(SESSION_PREFIX)
    except Exception:  # cleanup only; a missing broker already failed the tests that needed it
        pass
