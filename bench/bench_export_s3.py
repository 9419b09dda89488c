"""One seed's export from an archive kept in object storage: 1,000 items from archives of 100 and 1,000 (and
10,000) WARCs in a real SeaweedFS (tests/seaweed.py, started here on free 127.0.0.1 ports), read through the WARC
index by ranged GETs, in one run.

    .venv/bin/python bench/bench_export_s3.py --work /tmp/swath-bench-s3 --sizes 100 1000 [--rounds 3]

Each archive is bench/gen_archive.py's (seed 0's 10 WARCs hold its 1,000 tweets), uploaded to its own bucket
(key = the path under the data root) and announced to a SQLite store with `path` = the object's URL, as an S3
harvest announces it. The export runs the exporter workers' job with readers in this process; round 0 is cold
(no kept record scans), the figure the median of the warm rounds. The bytes fetched are counted per object
(core/objects_ranged.py): only the seed's WARCs may be fetched. Exit status 1 when the largest archive's export
takes more than 2x the smallest's, or anything else was fetched.
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
sys.path.insert(0, str(HERE.parent))

import gen_archive  # noqa: E402  (bench/ is no package)

SEED = {"id": "seed-0", "uid": "1000"}
KEY = "export.start.twitter.twitter_search_2"


def prepare(root: Path, warcs: int, seaweed: Any) -> tuple[Any, Path, set[str]]:
    """The archive in a new bucket and its index (path = the object URL); the config, the store and seed 0's URLs."""
    from swath.core.config import Config
    from swath.core.objects import store_for
    from swath.harvesters.retry import RetryPolicy
    from swath.store import Store
    from tests.seaweed import ACCESS_KEY, SECRET_KEY

    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    began = time.perf_counter()
    config = dataclasses.replace(Config.from_env({}), data_root=root, db_url=f"sqlite:///{root / 'swath.sqlite'}",
                                 storage_url=f"s3://{seaweed.new_bucket()}/archive", storage_endpoint=seaweed.endpoint,
                                 storage_access_key_id=ACCESS_KEY, storage_secret_access_key=SECRET_KEY)
    manifest = gen_archive.generate(out=root, warcs=warcs)
    primary = store_for(config, retry=RetryPolicy(retries=3, backoff=0.2))
    messages, seed_urls = [], set()
    for entry, body in zip(manifest["warcs"], manifest["messages"], strict=True):
        path = Path(entry["path"])
        info = primary.put_file(str(path.relative_to(root)), path)
        messages.append({**body, "warc": {**body["warc"], "path": info.url}})
        if entry["seed"] == SEED["id"]:
            seed_urls.add(info.url)
        path.unlink()  # only the bucket holds the WARCs, as after an S3 harvest
    store = Store(url=config.db_url)
    gen_archive.index_messages(store, messages, data_root=root)
    store.close()
    print(f"  {warcs} WARCs uploaded and indexed in {time.perf_counter() - began:.1f} s", file=sys.stderr)
    return config, root, seed_urls


def export_once(config: Any, name: str) -> tuple[float, dict[str, Any]]:
    from swath.core.jobs import JobContext
    from swath.export_index import run_export as run_indexed

    statuses: list[dict[str, Any]] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="bench")
    body = {"id": name, "type": "twitter_search_2", "seeds": [SEED], "path": f"exports/{name}", "format": "csv"}
    began = time.perf_counter()
    run_indexed(body, routing_key=KEY, ctx=ctx, workers=1)
    elapsed = time.perf_counter() - began
    shutil.rmtree(config.data_root / "exports" / name)
    final = statuses[-1]
    if final["status"] != "completed success" or final["items"] != 1000:
        raise SystemExit(f"export {name} failed or wrote {final.get('items')} items: {final}")
    return elapsed, final


def main() -> None:
    from swath.core import objects_ranged
    from tests.seaweed import Seaweed

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000])
    ap.add_argument("--rounds", type=int, default=3, help="warm rounds after the cold one")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = ap.parse_args()
    shutil.rmtree(args.work / "seaweed", ignore_errors=True)
    seaweed = Seaweed.start(args.work / "seaweed")
    try:
        archives = {size: prepare(args.work / str(size), size, seaweed) for size in args.sizes}
        export_once(archives[args.sizes[0]][0], "warm-up")  # discarded: loads the modules, opens the store
        rows, only_selected = [], True
        for size in args.sizes:
            config, root, seed_urls = archives[size]
            shutil.rmtree(root / ".swath", ignore_errors=True)  # cold: no kept record scans
            times, fetched = [], []
            for n in range(args.rounds + 1):
                objects_ranged.FETCHED.clear()
                elapsed, _ = export_once(config, f"s3-{n}")
                times.append(elapsed)
                fetched.append(sum(objects_ranged.FETCHED.values()))
                only_selected = only_selected and set(objects_ranged.FETCHED) <= seed_urls
            rows.append({"warcs": size, "cold_s": round(times[0], 4), "s": round(statistics.median(times[1:]), 4),
                         "cold_fetched": fetched[0], "fetched": fetched[-1], "objects_selected": len(seed_urls)})
            print(f"  {size} WARCs: {rows[-1]['s']:.3f} s (cold {times[0]:.3f} s), fetched {fetched[-1]} bytes "
                  f"(cold {fetched[0]})", file=sys.stderr)
    finally:
        seaweed.stop()
    growth = rows[-1]["s"] / rows[0]["s"]
    result = {"machine": platform.machine(), "python": platform.python_version(), "rounds": args.rounds,
              "rows": rows, "growth": round(growth, 2), "flat": growth <= 2.0, "only_selected": only_selected}
    if args.json:
        print(json.dumps(result))
    else:
        print("| WARCs in bucket | export (s) | cold (s) | bytes fetched | cold bytes fetched | seed's objects |")
        print("| ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in rows:
            print(f"| {r['warcs']} | {r['s']:.3f} | {r['cold_s']:.3f} | {r['fetched']} | {r['cold_fetched']} | "
                  f"{r['objects_selected']} |")
        print(f"\n{rows[-1]['warcs'] // rows[0]['warcs']}x the archive, {growth:.2f}x the time "
              f"({'flat' if growth <= 2.0 else 'NOT flat'}: within 2x); "
              f"only the seed's objects fetched: {only_selected}")
    sys.exit(0 if growth <= 2.0 and only_selected else 1)


if __name__ == "__main__":
    main()
