"""Exports that cost what they select: one seed's 1,000 items exported from archives of 100, 1,000 and 10,000
WARCs, through the store's WARC index and through the listing of the data root, in one run.

    .venv/bin/python bench/bench_export_index.py --work /tmp/swath-bench-index --sizes 100 1000 10000 [--rounds 5]

Each archive is made by bench/gen_archive.py (seed 0's 10 WARCs hold its 1,000 tweets; every other WARC 2
tweets of its own seed) and announced to a SQLite store as the monitor records warc_created. Both paths run
the exporter workers' job (swath.export_index.run_export with the store, exporters.base.run_export with the
listing) with readers in this process, after one discarded export that loads the modules; round 0 is cold
(no kept listing or record scans), the figure is the median of the warm rounds after it. The index path
must stay flat: its time at the largest archive within 2x its time at the smallest (exit status 1 otherwise).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_archive  # noqa: E402  (bench/ is no package)

SEED = {"id": "seed-0", "uid": "1000"}
KEY = "export.start.twitter.twitter_search_2"


def prepare(root: Path, warcs: int) -> Path:
    """The archive of `warcs` WARCs and its indexed store under `root` (kept between runs)."""
    from swath.store import Store

    done = root / "ready.json"
    store_file = root / "swath.sqlite"
    if done.is_file() and json.loads(done.read_text())["warcs"] == warcs:
        return store_file
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    began = time.perf_counter()
    manifest = gen_archive.generate(out=root, warcs=warcs)
    store = Store(url=f"sqlite:///{store_file}")
    gen_archive.index_messages(store, manifest["messages"], data_root=root)
    store.close()
    done.write_text(json.dumps({"warcs": warcs}))
    print(f"  made {warcs} WARCs and their index in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return store_file


def export_once(root: Path, store_file: Path, *, indexed: bool, name: str) -> tuple[float, dict[str, Any]]:
    from swath.core.config import Config
    from swath.core.jobs import JobContext
    from swath.export_index import run_export as run_indexed
    from swath.exporters.base import run_export
    from swath.exporters.warc_index import ScanIndex

    config = dataclasses.replace(Config.from_env({}), data_root=root, db_url=f"sqlite:///{store_file}")
    statuses: list[dict[str, Any]] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="bench")
    body = {"id": name, "type": "twitter_search_2", "seeds": [SEED], "path": f"exports/{name}", "format": "csv"}
    began = time.perf_counter()
    if indexed:
        run_indexed(body, routing_key=KEY, ctx=ctx, workers=1)
    else:
        run_export(body, routing_key=KEY, ctx=ctx, index=ScanIndex(data_root=root), workers=1)
    elapsed = time.perf_counter() - began
    shutil.rmtree(root / "exports" / name)
    final = statuses[-1]
    if final["status"] != "completed success" or final["items"] != 1000:
        raise SystemExit(f"export {name} failed or wrote {final.get('items')} items: {final}")
    return elapsed, final


def select_ms(root: Path, store_file: Path, rounds: int = 20) -> float:
    """The index's part alone: median milliseconds to open the index and select the seed's WARCs."""
    from swath.core.config import Config
    from swath.export_index import store_index
    from swath.messages.model import ExportStart

    config = dataclasses.replace(Config.from_env({}), data_root=root, db_url=f"sqlite:///{store_file}")
    start = ExportStart.from_dict({"id": "s", "type": "twitter_search_2", "seeds": [SEED], "path": "e",
                                   "format": "csv"})
    times = []
    for _ in range(rounds):
        began = time.perf_counter()
        store_index(config).select(start)
        times.append(time.perf_counter() - began)
    return round(statistics.median(times) * 1000, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--rounds", type=int, default=5, help="warm rounds after the cold one")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    stores = {size: prepare(args.work / str(size), size) for size in args.sizes}
    for indexed in (True, False):  # discarded: loads the modules and opens the store, once for every size
        export_once(args.work / str(args.sizes[0]), stores[args.sizes[0]], indexed=indexed, name="warm-up")
    rows = []
    for size in args.sizes:
        root, store_file = args.work / str(size), stores[size]
        shutil.rmtree(root / ".swath", ignore_errors=True)  # cold: no kept listing or record scans
        row: dict[str, Any] = {"warcs": size}
        for indexed, label in ((True, "index"), (False, "listing")):
            times = []
            for n in range(args.rounds + 1):
                elapsed, final = export_once(root, store_file, indexed=indexed, name=f"{label}-{n}")
                times.append(elapsed)
            row[f"{label}_cold_s"] = round(times[0], 4)
            row[f"{label}_s"] = round(statistics.median(times[1:]), 4)
            row[f"{label}_codes"] = sorted({n["code"] for n in final["infos"] + final["warnings"]})
        row["listing_over_index"] = round(row["listing_s"] / row["index_s"], 1)
        row["select_ms"] = select_ms(root, store_file)
        rows.append(row)
        print(f"  {size} WARCs: index {row['index_s']:.3f} s, listing {row['listing_s']:.3f} s "
              f"(cold {row['index_cold_s']:.3f} / {row['listing_cold_s']:.3f} s)", file=sys.stderr)
    flat = rows[-1]["index_s"] / rows[0]["index_s"]
    listing_growth = rows[-1]["listing_s"] / rows[0]["listing_s"]
    result = {"machine": platform.machine(), "python": platform.python_version(), "rounds": args.rounds,
              "rows": rows, "index_growth": round(flat, 2), "listing_growth": round(listing_growth, 1),
              "flat": flat <= 2.0}
    if args.json:
        print(json.dumps(result))
    else:
        print("| WARCs in archive | index (s) | listing (s) | listing / index | index cold (s) | listing cold (s) "
              "| index selection alone (ms) |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            print(f"| {r['warcs']} | {r['index_s']:.3f} | {r['listing_s']:.3f} | {r['listing_over_index']} | "
                  f"{r['index_cold_s']:.3f} | {r['listing_cold_s']:.3f} | {r['select_ms']} |")
        print(f"\nindex: {rows[-1]['warcs'] // rows[0]['warcs']}x the archive, {flat:.2f}x the time "
              f"({'flat' if flat <= 2.0 else 'NOT flat'}: within 2x); listing: {listing_growth:.1f}x the time")
    sys.exit(0 if flat <= 2.0 else 1)


if __name__ == "__main__":
    main()
