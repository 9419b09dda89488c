"""A collection's statistics on each load of its page: summed from every run (what each load did before
swath/store/stats_cache.py) against the kept sums after the one query that says nothing changed, for a
collection of 1,000 and of 10,000 runs (bench_web_pages.py's store: runs finished, with stats).

    .venv/bin/python bench/bench_web_stats.py --work /tmp/swath-bench-web-stats [--rounds 7] [--quick]

Rounds interleave the two ways in one session; medians in ms; the load average beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_web_pages import build  # noqa: E402 (after the path)


def measure(root: Path, runs: int, rounds: int) -> dict[str, object]:
    from swath.store.models import Source
    from swath.store.stats import collection_stats
    from swath.store.stats_cache import StatsCache

    _config, store = build(root, 1, runs)
    kept = StatsCache()
    summed, cached = [], []
    with store.session() as s:
        src = s.get(Source, "src000000")
        assert kept.get(s, src).as_dict() == collection_stats(s, src).as_dict()  # the same numbers
        for _ in range(rounds):
            start = time.perf_counter()
            collection_stats(s, src)
            summed.append(time.perf_counter() - start)
            start = time.perf_counter()
            kept.get(s, src)
            cached.append(time.perf_counter() - start)
    store.close()
    every, kept_ms = statistics.median(summed) * 1000, statistics.median(cached) * 1000
    return {"runs": runs, "summed_ms": round(every, 2), "kept_ms": round(kept_ms, 2),
            "ratio": round(every / kept_ms, 1), "load": os.getloadavg()}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", type=Path, default=Path("/tmp/swath-bench-web-stats"))
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="1,000 runs only")
    args = parser.parse_args()
    for runs in (1000,) if args.quick else (1000, 10000):
        print(json.dumps(measure(args.work / f"r{runs}", runs, args.rounds)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
