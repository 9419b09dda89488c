"""Export speed and memory, measured in one run on the same files (figures go to docs/performance.md).

    .venv/bin/python bench/bench_export.py --work /tmp/swath-bench --sizes 50000 200000 \
        --twarc2 /tmp/twarccsv-venv/bin/twarc2

(a) floor: FastWARC iterates the records and orjson parses each payload, nothing else;
(b) swath: a CSV export with dedupe through exporters.base.run_export (the job the worker runs);
(c) twarc-csv: `twarc2 csv` on the same API responses as JSONL (separate venv, pandas<3).
Each measurement runs in its own process, so peak RSS (ru_maxrss) is that step's alone.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def _child(args: list[str]) -> tuple[dict, float, int]:
    """Run a step in a fresh process; its JSON result, wall seconds and peak RSS in MB."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, cwd=ROOT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"step failed ({status}): {' '.join(args)}")
    lines = out.decode().strip().splitlines()
    result = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return result, wall, usage.ru_maxrss // 1024


def step_floor(directory: Path) -> None:
    import orjson
    from fastwarc.warc import ArchiveIterator, WarcRecordType

    items = 0
    start = time.perf_counter()
    for path in sorted(directory.glob("*.warc.gz")):
        for record in ArchiveIterator(str(path), record_types=WarcRecordType.response):
            items += len(orjson.loads(record.reader.read()).get("data", ()))
    print(json.dumps({"items": items, "seconds": time.perf_counter() - start}))


def step_swath(directory: Path, fmt: str, dedupe: bool) -> None:
    from exporters.base import run_export
    from swath.config import Config
    from swath.jobs import JobContext

    config = dataclasses.replace(Config.from_env({}), data_root=directory.parent, status_interval=3600)
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="bench")
    export_id = f"bench-{directory.name}-{fmt}"
    body = {"id": export_id, "type": "twitter_search_2", "collection": {"id": directory.name},
            "path": f"exports/{export_id}", "format": fmt, "dedupe": dedupe}
    start = time.perf_counter()
    run_export(body, routing_key="export.start.twitter.twitter_search_2", ctx=ctx)
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
    args = ap.parse_args()
    if args.step == "floor":
        return step_floor(args.dir)
    if args.step == "swath":
        return step_swath(args.dir, args.format, not args.no_dedupe)

    py = sys.executable
    me = str(Path(__file__).resolve())
    report: dict = {"date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                    "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}",
                    "command": " ".join([Path(py).name if False else ".venv/bin/python", "bench/bench_export.py",
                                         *sys.argv[1:]]), "sizes": {}}
    for size in args.sizes:
        directory = args.work / f"tweets{size}"
        if not (directory / "tweets.jsonl").exists():
            subprocess.run([py, str(HERE / "gen_tweets.py"), "--tweets", str(size), "--out", str(directory)],
                           check=True, cwd=ROOT)
        floor, _, floor_rss = _child([py, me, "--step", "floor", "--dir", str(directory)])
        swath, _, swath_rss = _child([py, me, "--step", "swath", "--dir", str(directory)])
        row = {
            "records_items": floor["items"], "exported_unique": swath["items"],
            "floor_items_per_s": round(floor["items"] / floor["seconds"]),
            "swath_csv_dedupe_items_per_s": round(floor["items"] / swath["seconds"]),
            "ratio_swath_to_floor": round(floor["seconds"] / swath["seconds"], 2),
            "floor_peak_rss_mb": floor_rss, "swath_csv_peak_rss_mb": swath_rss,
        }
        if size == max(args.sizes):
            xlsx, _, xlsx_rss = _child([py, me, "--step", "swath", "--dir", str(directory), "--format", "xlsx"])
            row.update(xlsx_items_per_s=round(floor["items"] / xlsx["seconds"]), xlsx_peak_rss_mb=xlsx_rss)
            if args.twarc2 and Path(args.twarc2).exists():
                out_csv = args.work / f"twarc-csv-{size}.csv"
                _, wall, rss = _child([args.twarc2, "csv", "--no-inline-referenced-tweets",
                                       str(directory / "tweets.jsonl"), str(out_csv)])
                row.update(twarc_csv_items_per_s=round(floor["items"] / wall), twarc_csv_peak_rss_mb=rss,
                           ratio_swath_to_twarc_csv=round(wall / swath["seconds"], 1))
        report["sizes"][size] = row
        print(json.dumps({size: row}), flush=True)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
