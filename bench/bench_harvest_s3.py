"""Harvest throughput with WARCs in object storage against the local filesystem, in the same run (issue 36's
bench: ≥ 0.8×). The engine harvest of bench/bench_harvest.py (generic_pages, tweet-like pages from a server in a
child process), once with the data root only and once with SWATH_STORAGE_URL on a SeaweedFS this bench starts
on 127.0.0.1 (tests/seaweed.py): every WARC uploaded, checked and removed before it is announced.

    .venv/bin/python bench/bench_harvest_s3.py [--pages 400] [--items 20] [--rounds 5] [--warc-mb 2]

Rounds alternate local / S3; the ratio is the median of the rounds' S3/local pages-per-second.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_harvest import serve  # noqa: E402
from swath.core.config import Config  # noqa: E402
from swath.core.jobs import JobContext  # noqa: E402
from swath.harvesters.coordination import Coordination, LocalFiles  # noqa: E402
from swath.harvesters.run import run_harvest  # noqa: E402
from tests.seaweed import ACCESS_KEY, SECRET_KEY, Seaweed  # noqa: E402


def harvest(url: str, config: Config, name: str, coordination: Coordination | None = None) -> tuple[int, int]:
    """(pages, WARCs announced) of one generic_pages harvest through run_harvest; `coordination`: where its claim
    and state are kept (None: files under the data root, which one process may use with object storage too)."""
    published: list = []
    ctx = JobContext(config=config, publish=lambda key, body: published.append((key, body)), service="bench")
    message = {"id": f"bench:{name}", "type": "generic_pages", "path": f"c/{name}",
               "seeds": [{"id": "s", "token": url}], "credentials": {"api_key": "bench-key-123"},
               "collection_set": {"id": "cs"}, "collection": {"id": "c"}}
    run_harvest(message, routing_key="harvest.start.generic.generic_pages", ctx=ctx,
                coordination=coordination or LocalFiles(config.data_root))
    final = published[-1][1]
    assert final["status"] == "completed success", final
    return final["stats"], sum(1 for key, _ in published if key == "warc_created")


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU time of these processes so far (SeaweedFS shares this machine's cores)."""
    total = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat)
    return total / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warc-mb", type=float, default=2.0, help="SWATH_WARC_MAX_BYTES in MiB (several WARCs)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.pages, args.items)
    child = subprocess.Popen([sys.executable, str(Path(__file__).with_name("bench_harvest.py")), "--serve",
                              "--pages", str(args.pages), "--items", str(args.items)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rates: dict[str, list[float]] = {"local": [], "s3": []}
    store_cpu: list[float] = []
    wall: dict[str, list[float]] = {"local": [], "s3": []}
    warcs: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        seaweed = Seaweed.start(Path(tmp) / "seaweed")
        try:
            bucket = seaweed.new_bucket()
            url = child.stdout.readline().strip()  # type: ignore[union-attr]
            local = dataclasses.replace(Config.from_env({}), data_root=Path(tmp) / "data", status_interval=3600,
                                        warc_max_bytes=int(args.warc_mb * 1024 * 1024))
            s3 = dataclasses.replace(local, storage_url=f"s3://{bucket}/bench", storage_endpoint=seaweed.endpoint,
                                     storage_access_key_id=ACCESS_KEY, storage_secret_access_key=SECRET_KEY)
            for round_no in range(args.rounds):
                for name, config in (("local", local), ("s3", s3)):
                    pids = [p.pid for p in (seaweed.server, seaweed.volume) if p is not None]
                    began, cpu_began = time.perf_counter(), cpu_seconds(pids)
                    _stats, warcs[name] = harvest(url, config, f"{name}{round_no}")
                    wall[name].append(time.perf_counter() - began)
                    rates[name].append(args.pages / wall[name][-1])
                    if name == "s3":
                        store_cpu.append(cpu_seconds(pids) - cpu_began)
                print(f"round {round_no + 1}: local {rates['local'][-1]:7.1f} s3 {rates['s3'][-1]:7.1f} pages/s  "
                      f"ratio {rates['s3'][-1] / rates['local'][-1]:.2f}  load "
                      f"{' '.join(f'{n:.2f}' for n in os.getloadavg())}", file=sys.stderr)
            left = list((Path(tmp) / "data").rglob("*/s3*/**/*.warc.gz"))
        finally:
            seaweed.stop()
    child.stdin.close()  # type: ignore[union-attr]
    child.wait()
    ratios = [s / lo for s, lo in zip(rates["s3"], rates["local"], strict=True)]
    print(f"pages={args.pages} items/page={args.items} rounds={args.rounds} warc_max={args.warc_mb} MiB "
          f"WARCs per harvest: local {warcs['local']}, s3 {warcs['s3']}; left on disk by S3 runs: {len(left)}")
    print(f"local: best {max(rates['local']):.1f} pages/s; s3: best {max(rates['s3']):.1f} pages/s; SeaweedFS CPU "
          f"during the S3 harvests: median {statistics.median(store_cpu):.2f} s of "
          f"{statistics.median(wall['s3']):.2f} s wall")
    print(f"ratio s3/local: median of rounds {statistics.median(ratios):.2f}, best/best "
          f"{max(rates['s3']) / max(rates['local']):.2f}  (target >= 0.8)")


if __name__ == "__main__":
    main()
