"""A small burst (the full 1,000 is bench/bench_load.py): every queued harvest drained by two replicas of
each harvester ends exactly once, successfully; the figures are printed, never asserted."""

from __future__ import annotations

import pytest

from tests.reliability.load import drain

pytestmark = pytest.mark.reliability


@pytest.mark.parametrize("messages, replicas", [(50, 2), pytest.param(1000, 2, marks=pytest.mark.slow)])
def test_burst_of_starts_is_drained_once_each(config, tmp_path, messages, replicas):
    result = drain(config=config, messages=messages, replicas=replicas, workdir=tmp_path)
    assert sorted(result.finals) == sorted(f"load:{i}" for i in range(messages))
    assert all(len(f) == 1 and f[0]["status"] == "completed success" for f in result.finals.values()), \
        {k: v for k, v in result.finals.items() if len(v) != 1 or v[0]["status"] != "completed success"}
    assert all(kib > 0 for kib in result.peak_rss_kib.values())
    print(f"{messages} harvests, {replicas} replicas: {result.seconds:.1f}s, {result.per_minute:.0f}/min, "
          f"peak RSS KiB {result.peak_rss_kib}")
