"""Load: N harvest.start messages (half generic_pages, half Tumblr) queued at once on the real RabbitMQ,
drained by 1 and then 2 replicas of each harvester (plus one monitor) against local fakes.

Reports harvests/minute, statuses/s through the monitor, peak RSS per worker process (VmHWM) and the
2-replica/1-replica throughput ratio, as Markdown for docs/reliability.md.

    .venv/bin/python bench/bench_load.py --messages 1000
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swath.core.config import Config  # noqa: E402
from tests.reliability.load import drain  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--replicas", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    config = Config.from_env()
    rows = []
    for replicas in args.replicas:
        with tempfile.TemporaryDirectory(prefix="swath-load-") as tmp:
            result = drain(config=config, messages=args.messages, replicas=replicas, workdir=Path(tmp))
        ok = sum(1 for f in result.finals.values() if len(f) == 1 and f[0]["status"] == "completed success")
        statuses = sum(len(f) for f in result.finals.values())
        rows.append((replicas, result, ok, statuses))
        print(f"replicas={replicas}: {result.seconds:.1f}s {result.per_minute:.0f} harvests/min "
              f"rss={result.peak_rss_kib} ok={ok}/{args.messages}", file=sys.stderr)
    base = rows[0][1].per_minute
    print(f"`.venv/bin/python bench/bench_load.py --messages {args.messages}` on "
          f"{dt.date.today().isoformat()}, {os.cpu_count()} CPU(s):\n")
    print("| replicas per harvester | harvests | drained in | harvests/min | ratio to 1 replica | "
          "monitor msgs/s | peak RSS generic / tumblr / monitor (MiB) | ended once, success |")
    print("|---|---|---|---|---|---|---|---|")
    for replicas, r, ok, _ in rows:
        # the monitor records at least one running status, one warc_created and the final per harvest
        rss = " / ".join(f"{r.peak_rss_kib.get(n, 0) / 1024:.0f}" for n in ("generic_harvester", "tumblr_harvester",
                                                                             "monitor"))
        print(f"| {replicas} | {r.messages} | {r.seconds:.1f} s | {r.per_minute:.0f} | {r.per_minute / base:.2f} | "
              f"{3 * r.messages / r.monitor_seconds:.0f} (≥) | {rss} | {ok}/{r.messages} |")


if __name__ == "__main__":
    main()
