"""A harvest process's start-up tuning (swath/harvest_job.py `tune_process`): SWATH_SWITCH_INTERVAL."""

from __future__ import annotations

import sys

import pytest

from swath.core.config import Config
from swath.harvest_job import tune_process


@pytest.fixture
def interval():
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def test_the_configured_switch_interval_is_set(interval):
    asked = interval / 4
    tune_process(Config.from_env({"SWATH_SWITCH_INTERVAL": repr(asked)}))
    assert sys.getswitchinterval() == pytest.approx(asked)  # the interpreter keeps it in microseconds


def test_zero_or_less_leaves_pythons_own(interval):
    for value in ("0", "-1"):
        config = Config.from_env({"SWATH_SWITCH_INTERVAL": value})
        assert config.switch_interval == 0
        tune_process(config)
        assert sys.getswitchinterval() == interval


def test_a_switch_interval_that_is_not_a_number_is_refused():
    with pytest.raises(SystemExit, match="SWATH_SWITCH_INTERVAL must be a number"):
        Config.from_env({"SWATH_SWITCH_INTERVAL": "fast"})
