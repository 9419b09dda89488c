"""Benchmark: incremental META-SHARE sync of N LRs where P% changed, against a local node server.

    .venv/bin/python bench/bench_metashare.py [--lrs 10000] [--changed-percent 1]

Prints, per round, the LR requests the node answered (must equal the changed count) and the wall time
of the harvest (metashare_sync through the engine, WARC written), and the median's ratio to a floor
measured in the same run: the same harvest when nothing changed (login + inventory + local checksum
scan, best of 3 after a warm-up), so the ratio shows what the changed LRs cost on top.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import shutil
import statistics
import tempfile
import time
from collections import Counter
from pathlib import Path

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.harvesters.run import run_harvest
from swath.platforms.metashare.server import NodeServer
from swath.platforms.metashare.storage import REMOTE, LRStorage, StorageLocal, md5_hex

FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "metashare"
USERS = {"bench": "bench-password-123"}


def build_node(root: Path, count: int) -> LRStorage:
    storage = LRStorage(root=root)
    documents = [p.read_bytes() for p in sorted(FIXTURES.glob("*.xml"))]
    for n in range(count):
        storage.add_master(documents[n % len(documents)] + f"<!-- lr {n} -->".encode(), source_url="http://bench.node")
    return storage


def mirror(node: LRStorage, client_root: Path, source_node: str) -> LRStorage:
    """The client's storage as a previous full sync would have left it (copied, not fetched, to save time)."""
    client = LRStorage(root=client_root)
    for identifier in node.ids():
        lr = node.get(identifier)
        client.put(identifier=identifier, metadata_xml=lr.metadata_xml, storage_json=lr.storage_json,
                   local=StorageLocal(copy_status=REMOTE, source_node=source_node,
                                      metadata_md5=md5_hex(lr.metadata_xml)))
    return client


def harvest_once(config: Config, url: str, harvest_id: str) -> tuple[float, Counter, str]:
    published: list[tuple[str, dict]] = []
    ctx = JobContext(config=config, publish=lambda key, body: published.append((key, body)), service="bench")
    body = {"id": harvest_id, "type": "metashare_sync", "path": "collection",
            "seeds": [{"id": "node", "token": url}],
            "credentials": {"username": "bench", "password": USERS["bench"]}}
    began = time.perf_counter()
    run_harvest(body, routing_key="harvest.start.metashare.metashare_sync", ctx=ctx)
    elapsed = time.perf_counter() - began
    final = [b for k, b in published if k.startswith("harvest.status.")][-1]
    totals: Counter = Counter()
    for per_day in final["stats"].values():
        totals.update(per_day)
    return elapsed, totals, final["status"]


def lr_requests(node: NodeServer) -> int:
    return sum(1 for entry in node.requests_to("/sync/") if entry.path.endswith("/metadata/"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", type=int, default=10_000)
    parser.add_argument("--changed-percent", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=3, help="change a fresh P%% and sync, this many times")
    args = parser.parse_args()
    changed_count = round(args.lrs * args.changed_percent / 100)
    work = Path(tempfile.mkdtemp(prefix="bench-metashare-"))
    try:
        t0 = time.perf_counter()
        node_storage = build_node(work / "node", args.lrs)
        data_root = work / "data"
        config = dataclasses.replace(Config.from_env({}), data_root=data_root, status_interval=3600.0,
                                     db_url=f"sqlite:///{work / 'bench.sqlite'}")
        with NodeServer(storage=node_storage, users=USERS) as node:
            mirror(node_storage, data_root / "collection" / "lr-storage", node.url)
            setup = time.perf_counter() - t0

            harvest_once(config, node.url, "bench:warmup")  # imports, first WARC, page cache
            floors = [harvest_once(config, node.url, f"bench:floor:{n}") for n in range(3)]
            floor = min(elapsed for elapsed, _, _ in floors)

            ids = list(node_storage.ids())
            step = max(1, len(ids) // max(1, changed_count))
            rounds = []
            for n in range(args.rounds):
                changed = ids[n::step][:changed_count]  # a different 1% each round
                for identifier in changed:
                    path = node_storage.root / identifier / "metadata.xml"
                    path.write_bytes(path.read_bytes() + f"<!-- changed {n} -->".encode())
                before = lr_requests(node)
                elapsed, totals, status = harvest_once(config, node.url, f"bench:changed:{n}")
                rounds.append({"changed": len(changed), "lr_requests": lr_requests(node) - before,
                               "seconds": round(elapsed, 3), "stats": dict(totals), "status": status})
        median = statistics.median(r["seconds"] for r in rounds)
        print(json.dumps({
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "lrs": args.lrs,
            "changed_per_round": changed_count,
            "floor_no_change_s": round(floor, 3),
            "floor_stats": dict(floors[0][1]),
            "rounds": rounds,
            "changed_sync_median_s": round(median, 3),
            "ratio_changed_to_floor": round(median / floor, 2),
            "per_changed_lr_ms": round((median - floor) / max(1, changed_count) * 1000, 2),
            "setup_s": round(setup, 1),
        }, indent=2))
        bad = [r for r in rounds if r["lr_requests"] != r["changed"] or r["stats"]["updated"] != r["changed"]]
        if bad:
            raise SystemExit(f"FAIL: LR requests or updated count differ from the changed count: {bad}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
