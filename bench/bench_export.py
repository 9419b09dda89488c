"""Export speed and memory, measured in one run on the same files (figures go to docs/performance.md).

    .venv/bin/python bench/bench_export.py --work /tmp/swath-bench --sizes 50000 200000 \
        --twarc2 /tmp/twarccsv-venv/bin/twarc2 [--rounds 3] [--baseline /tmp/before/pkg] [--quick]

`--baseline DIR` also runs the one-process CSV and the XLSX exports, in every round, with another version
of swath: DIR holds a `swath` package shaped like the installed one (a `git archive` of the other commit,
with core/, exporters/... linked into its swath/), imported in place of the editable install.
`--quick` (20,000 tweets, one round, no twarc-csv) checks the bench runs; dev/test does not run it.
Every round prints the load average (1 / 5 / 15 min) at its start and end: the machine is shared.

(a) floor: FastWARC iterates the records and orjson parses each payload, nothing else;
(b) swath: a CSV export with dedupe through exporters.base.run_export (the job the worker runs), timed
    as a running export worker sees it: its fork server started at worker start-up, not per export;
(c) twarc-csv: `twarc2 csv` on the same API responses as JSONL (separate venv, pandas<3), in every round
    of the largest size, right after swath's (`--twarc2`); `--no-xlsx` leaves the XLSX exports out.
Each measurement runs in its own process; memory is the peak of the summed RSS of that process and
every process it starts (worker pools), sampled from /proc, and CPU seconds are summed likewise.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class TreeSampler(threading.Thread):
    """Samples a process and all its descendants (worker pools, fork servers) from /proc every 100 ms:
    the peak of their summed RSS (pages shared by forked processes count once per process, so this errs
    high) and the CPU seconds each used (as last seen: a process's final < 100 ms may be missed).
    RSS, not PSS: reading smaps_rollup walks a process's page tables and slowed the export it measured."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_rss_kb = 0
        self.cpu_ticks: dict[int, int] = {}
        self.done = threading.Event()

    def _tree(self) -> list[int]:
        tree, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            try:  # every thread's children (the pool's processes are started from helper threads)
                for task in os.listdir(f"/proc/{pid}/task"):
                    todo.extend(int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split())
            except OSError:
                continue  # it ended meanwhile
        return tree

    def run(self) -> None:
        while not self.done.wait(0.1):
            total = 0
            for pid in self._tree():
                try:
                    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                    self.cpu_ticks[pid] = int(fields[11]) + int(fields[12])  # utime + stime
                    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                        if line.startswith("VmRSS:"):
                            total += int(line.split()[1])
                except (OSError, IndexError, ValueError):
                    continue  # it ended between listing and reading
            self.peak_rss_kb = max(self.peak_rss_kb, total)

    @property
    def cpu_seconds(self) -> float:
        return sum(self.cpu_ticks.values()) / os.sysconf("SC_CLK_TCK")


def _child(args: list[str], env: dict[str, str] | None = None) -> tuple[dict, float, int, float]:
    """Run a step in a fresh process; its JSON result, wall seconds, peak memory in MB and CPU seconds,
    both summed over the step and every process it starts."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, cwd=ROOT, env={**os.environ, **(env or {})})
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    sampler.done.set()
    sampler.join()
    if status != 0:
        raise SystemExit(f"step failed ({status}): {' '.join(args)}")
    lines = out.decode().strip().splitlines()
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    # The step's own figures (exact) are a floor for the sampled ones.
    peak_mb = max(sampler.peak_rss_kb, usage.ru_maxrss) // 1024
    cpu = max(sampler.cpu_seconds, usage.ru_utime + usage.ru_stime)
    return result, wall, peak_mb, cpu


def _use_tree() -> None:
    """Import swath from SWATH_BENCH_TREE (a --baseline step) instead of the editable install."""
    tree = os.environ.get("SWATH_BENCH_TREE")
    if tree:
        sys.meta_path[:] = [f for f in sys.meta_path if "Editable" not in repr(f)]
        sys.path.insert(0, tree)


def _load() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def step_floor(directory: Path) -> None:
    import orjson
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    items = 0
    start = time.perf_counter()
    for path in sorted(directory.glob("*.warc.gz")):
        for record in ArchiveIterator(str(path), record_types=WarcRecordType.response):
            items += len(orjson.loads(record.reader.read()).get("data", ()))
    print(json.dumps({"items": items, "seconds": time.perf_counter() - start}))


def step_swath(directory: Path, fmt: str, dedupe: bool, workers: int | None) -> None:
    _use_tree()
    from swath.core.config import Config
    from swath.core.jobs import JobContext
    from swath.exporters.base import run_export
    from swath.exporters.scans import CACHE_DIR

    config = dataclasses.replace(Config.from_env({}), data_root=directory.parent, status_interval=3600)
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="bench")
    # Timed cold: the record offsets a previous round's export kept would spare this one its scan.
    shutil.rmtree(config.data_root / CACHE_DIR, ignore_errors=True)
    if workers != 1:
        from swath.exporters.reader import start_processes

        start_processes()  # as an export worker does once at start-up, before its first export
    export_id = f"bench-{directory.name}-{fmt}"
    body = {"id": export_id, "type": "twitter_search_2", "collection": {"id": directory.name},
            "path": f"exports/{export_id}", "format": fmt, "dedupe": dedupe}
    start = time.perf_counter()
    run_export(body, routing_key="export.start.twitter.twitter_search_2", ctx=ctx, workers=workers)
    seconds = time.perf_counter() - start
    final = statuses[-1]
    assert final["status"] == "completed success", final
    print(json.dumps({"items": final["items"], "seconds": seconds}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", type=Path, default=Path("/tmp/swath-bench"))
    ap.add_argument("--sizes", type=int, nargs="+", default=[50_000, 200_000])
    ap.add_argument("--twarc2", help="twarc2 of a venv with twarc-csv and pandas<3 (skipped if absent)")
    ap.add_argument("--step", choices=["floor", "swath"])
    ap.add_argument("--dir", type=Path)
    ap.add_argument("--format", default="csv")
    ap.add_argument("--no-dedupe", action="store_true")
    ap.add_argument("--workers", type=int, help="export worker processes (default: by input size)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds of floor and swath (median reported)")
    ap.add_argument("--baseline", type=Path, help="a tree holding another swath package (see the docstring)")
    ap.add_argument("--no-xlsx", action="store_true", help="CSV exports only (and twarc-csv)")
    ap.add_argument("--quick", action="store_true", help="20,000 tweets, one round, no twarc-csv")
    args = ap.parse_args()
    if args.quick:
        args.sizes, args.rounds, args.twarc2 = [20_000], 1, None
    if args.step == "floor":
        return step_floor(args.dir)
    if args.step == "swath":
        return step_swath(args.dir, args.format, not args.no_dedupe, args.workers)

    py = sys.executable
    me = str(Path(__file__).resolve())
    report: dict = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                    "command": " ".join([".venv/bin/python", "bench/bench_export.py", *sys.argv[1:]]), "sizes": {}}
    for size in args.sizes:
        directory = args.work / f"tweets{size}"
        if not (directory / "tweets.jsonl").exists():
            subprocess.run([py, str(HERE / "gen_tweets.py"), "--tweets", str(size), "--out", str(directory)],
                           check=True, cwd=ROOT)
        # Rounds interleave the steps, and each round's ratio compares runs seconds apart: the machine is
        # shared and its speed drifts, so the median of per-round ratios is the figure, not one run.
        rounds = []
        twarc2 = args.twarc2 if args.twarc2 and Path(args.twarc2).exists() else None
        swath_step = [py, me, "--step", "swath", "--dir", str(directory)]
        base_env = {"SWATH_BENCH_TREE": str(args.baseline.resolve())} if args.baseline else None
        for n in range(args.rounds):
            load_start = _load()
            floor, _, floor_mb, floor_cpu = _child([py, me, "--step", "floor", "--dir", str(directory)])
            swath, _, swath_mb, swath_cpu = _child(swath_step)
            serial, _, serial_mb, serial_cpu = _child([*swath_step, "--workers", "1"])
            xlsx, xlsx_mb = ({"seconds": math.nan}, 0) if args.no_xlsx else \
                _child([*swath_step, "--format", "xlsx"])[::2]
            r = {"floor_s": floor["seconds"], "swath_s": swath["seconds"], "serial_s": serial["seconds"],
                 "xlsx_s": xlsx["seconds"], "floor_cpu": floor_cpu, "swath_cpu": swath_cpu,
                 "serial_cpu": serial_cpu, "floor_mb": floor_mb, "swath_mb": swath_mb, "serial_mb": serial_mb,
                 "xlsx_mb": xlsx_mb}
            if base_env:
                base, _, base_mb, base_cpu = _child([*swath_step, "--workers", "1"], env=base_env)
                base_xlsx, base_xlsx_mb = ({"seconds": math.nan}, 0) if args.no_xlsx else \
                    _child([*swath_step, "--format", "xlsx"], env=base_env)[::2]
                r.update(base_serial_s=base["seconds"], base_serial_cpu=base_cpu, base_xlsx_s=base_xlsx["seconds"],
                         base_xlsx_mb=base_xlsx_mb)
            if twarc2 and size == max(args.sizes):
                # In every round, right after swath: twarc-csv's speed drifts with the machine as swath's does,
                # so the ratio is a median of per-round ratios like the floor's.
                _, wall, rss, cpu = _child([twarc2, "csv", "--no-inline-referenced-tweets", "--hide-progress",
                                            str(directory / "tweets.jsonl"), str(args.work / f"twarc-csv-{size}.csv")],
                                           env={"BEARER_TOKEN": "unused"})
                r.update(twarc_s=wall, twarc_mb=rss, twarc_cpu=cpu)
            r["load"] = f"{load_start} -> {_load()}"
            rounds.append(r)
            print(json.dumps({"size": size, "round": n + 1, "load_1_5_15": r["load"],
                              "floor_s": round(r["floor_s"], 2), "swath_s": round(r["swath_s"], 2),
                              "serial_s": round(r["serial_s"], 2), "xlsx_s": round(r["xlsx_s"], 2),
                              **({"twarc_csv_s": round(r["twarc_s"], 2)} if "twarc_s" in r else {}),
                              **({"baseline_serial_s": round(r["base_serial_s"], 2),
                                  "baseline_xlsx_s": round(r["base_xlsx_s"], 2)} if base_env else {})}),
                  flush=True)

        def median(key: str, rows: list[dict[str, Any]] = rounds) -> float:
            return statistics.median(r[key] for r in rows)

        def median_ratio(num: str, den: str, rows: list[dict[str, Any]] = rounds) -> float:
            return round(statistics.median(r[num] / r[den] for r in rows), 2)

        items = floor["items"]

        def per_s(key: str, items: int = items) -> int | None:
            seconds = median(key)
            return None if math.isnan(seconds) else round(items / seconds)  # NaN: the step was left out
        row = {
            "records_items": items, "exported_unique": swath["items"], "rounds": args.rounds,
            "floor_items_per_s": round(items / median("floor_s")),
            "swath_csv_dedupe_items_per_s": round(items / median("swath_s")),
            "ratio_swath_to_floor": median_ratio("floor_s", "swath_s"),
            "ratio_swath_to_floor_each_round": [round(r["floor_s"] / r["swath_s"], 2) for r in rounds],
            "swath_1_process_items_per_s": round(items / median("serial_s")),
            "ratio_1_process_to_floor": median_ratio("floor_s", "serial_s"),
            "cpu_seconds_floor": round(median("floor_cpu"), 2), "cpu_seconds_swath": round(median("swath_cpu"), 2),
            "cpu_seconds_swath_1_process": round(median("serial_cpu"), 2),
            "floor_peak_mb": max(r["floor_mb"] for r in rounds),
            "swath_csv_peak_mb": max(r["swath_mb"] for r in rounds),
            "swath_1_process_peak_mb": max(r["serial_mb"] for r in rounds),
            "xlsx_items_per_s": per_s("xlsx_s"), "xlsx_peak_mb": max(r["xlsx_mb"] for r in rounds),
            "load_1_5_15_each_round": [r["load"] for r in rounds],
        }
        if base_env:
            row.update(
                baseline_1_process_items_per_s=round(items / median("base_serial_s")),
                baseline_ratio_1_process_to_floor=median_ratio("floor_s", "base_serial_s"),
                baseline_xlsx_items_per_s=per_s("base_xlsx_s"),
                baseline_xlsx_peak_mb=max(r["base_xlsx_mb"] for r in rounds),
                cpu_seconds_baseline_1_process=round(median("base_serial_cpu"), 2),
            )
        if "twarc_s" in rounds[0]:
            # twarc csv never calls the API, but twarc2 insists on a token being configured.
            row.update(twarc_csv_items_per_s=round(items / median("twarc_s")),
                       twarc_csv_peak_mb=max(r["twarc_mb"] for r in rounds),
                       ratio_swath_to_twarc_csv=median_ratio("twarc_s", "swath_s"),
                       ratio_swath_to_twarc_csv_each_round=[round(r["twarc_s"] / r["swath_s"], 1) for r in rounds],
                       ratio_1_process_to_twarc_csv=median_ratio("twarc_s", "serial_s"),
                       cpu_seconds_twarc_csv=round(median("twarc_cpu"), 2))
        report["sizes"][size] = row
        print(json.dumps({size: row}), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
