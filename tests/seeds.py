"""One seed per test session for everything random in the tests (no tests here): chaos loops take it from the
`swath_seed` fixture, Hypothesis from its own seed option; tests/conftest.py wires the hooks in.

SWATH_TEST_SEED=<n> replays a session's random choices; with CI set the default is a fixed seed and
Hypothesis runs derandomised (the "ci" profile), else a fresh seed is drawn and printed."""

from __future__ import annotations

import os
import random
from collections.abc import Generator

import pytest
from hypothesis import HealthCheck, settings

ENV = "SWATH_TEST_SEED"
CI_SEED = 1  # CI runs one fixed plan, so a red CI run is the same run on a developer's machine
IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
SEED = int(os.environ.get(ENV) or (CI_SEED if IN_CI else random.SystemRandom().randrange(1_000_000)))

# Deadlines and the too_slow health check measure the machine, not the code: off in both profiles.
settings.register_profile("dev", deadline=None, print_blob=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if IN_CI else "dev")


def replay_hint() -> str:
    profile = settings.get_current_profile_name()
    return f"swath test seed {SEED} ({ENV}={SEED} replays it; hypothesis profile {profile!r})"


@pytest.hookimpl(tryfirst=True)  # before Hypothesis's own pytest_configure reads --hypothesis-seed
def pytest_configure(config: pytest.Config) -> None:
    if getattr(config.option, "hypothesis_seed", None) is None:
        config.option.hypothesis_seed = str(SEED)  # the "ci" profile's derandomize still wins over it


def pytest_report_header(config: pytest.Config) -> str:
    return replay_hint()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    terminalreporter.write_line(replay_hint())  # also under -q, which hides the header


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo
                              ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed:
        report.sections.append(("swath seed", replay_hint()))
    return report


@pytest.fixture(scope="session")
def swath_seed() -> int:
    """The session seed, for a test's own random.Random."""
    return SEED
