"""Harvest throughput of the "several machines, no shared disk" recipe (docs/deployment.md) against the local
filesystem, in the same run (issue 36's bench: >= 0.8x). The engine harvest of bench/bench_harvest.py
(generic_pages, tweet-like pages from a server in a child process), alternating:

- local: the data root only (flock claim, state file), as a single machine runs today;
- object storage: SWATH_STORAGE_URL on a SeaweedFS this bench starts on 127.0.0.1 (tests/seaweed.py) AND the
  claim, state and final status in PostgreSQL (a fresh swath_bench_* database on SWATH_BENCH_PG_ADMIN_URL, default
  the dev server's postgres), as the workers run it: every WARC uploaded, checked, its state committed under the
  fencing token, removed, announced.

    .venv/bin/python bench/bench_object_storage.py [--quick] [--rounds 5] [--pages 1000] [--warc-mb 1]

The ratio is the median of the rounds' object-storage/local pages per second; the load average is printed per
round (this machine is shared). bench/bench_harvest_s3.py is the same harvest with object storage but file claims.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import create_engine, text  # noqa: E402

from bench.bench_harvest_s3 import cpu_seconds, harvest  # noqa: E402
from swath.core.config import Config  # noqa: E402
from swath.store.harvest_state import PgCoordination  # noqa: E402
from tests.seaweed import ACCESS_KEY, SECRET_KEY, Seaweed  # noqa: E402

PG_ADMIN = os.environ.get("SWATH_BENCH_PG_ADMIN_URL", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres")


@contextlib.contextmanager
def bench_database() -> Iterator[str]:
    """A PostgreSQL database for this run, dropped after it."""
    name = f"swath_bench_{uuid.uuid4().hex[:10]}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield PG_ADMIN.rpartition("/")[0] + f"/{name}"
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def load() -> str:
    return " ".join(f"{n:.2f}" for n in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=1000)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--warc-mb", type=float, default=1.0, help="SWATH_WARC_MAX_BYTES in MiB (several WARCs)")
    parser.add_argument("--quick", action="store_true", help="3 rounds of 300 pages: a smoke run, noisy")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.pages = 3, 300
    child = subprocess.Popen([sys.executable, str(Path(__file__).with_name("bench_harvest.py")), "--serve",
                              "--pages", str(args.pages), "--items", str(args.items)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rates: dict[str, list[float]] = {"local": [], "s3": []}
    warcs: dict[str, int] = {}
    store_cpu: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, bench_database() as db_url:
        seaweed = Seaweed.start(Path(tmp) / "seaweed")
        try:
            url = child.stdout.readline().strip()  # type: ignore[union-attr]
            local = dataclasses.replace(Config.from_env({}), data_root=Path(tmp) / "data", status_interval=3600,
                                        warc_max_bytes=int(args.warc_mb * 1024 * 1024))
            s3 = dataclasses.replace(local, data_root=Path(tmp) / "staging", db_url=db_url,
                                     storage_url=f"s3://{seaweed.new_bucket()}/bench",
                                     storage_endpoint=seaweed.endpoint, storage_access_key_id=ACCESS_KEY,
                                     storage_secret_access_key=SECRET_KEY)
            coordination = PgCoordination(config=s3)
            harvest(url, s3, "warm-up", coordination)  # migrations and first connections out of the rounds
            for round_no in range(args.rounds):
                order = [("local", local, None), ("s3", s3, coordination)]
                for name, config, coord in order if round_no % 2 == 0 else reversed(order):
                    pids = [p.pid for p in (seaweed.server, seaweed.volume) if p is not None]
                    began, cpu_began = time.perf_counter(), cpu_seconds(pids)
                    _stats, warcs[name] = harvest(url, config, f"{name}{round_no}", coord)
                    rates[name].append(args.pages / (time.perf_counter() - began))
                    if name == "s3":
                        store_cpu.append(cpu_seconds(pids) - cpu_began)
                print(f"round {round_no + 1}: local {rates['local'][-1]:7.1f}  object storage {rates['s3'][-1]:7.1f} "
                      f"pages/s  ratio {rates['s3'][-1] / rates['local'][-1]:.2f}  load {load()}", file=sys.stderr)
            left = [p for p in (Path(tmp) / "staging").rglob("*") if p.is_file() and ".warc" in p.name]
            coordination.engine.dispose()
        finally:
            seaweed.stop()
    child.stdin.close()  # type: ignore[union-attr]
    child.wait()
    ratios = [s / lo for s, lo in zip(rates["s3"], rates["local"], strict=True)]
    print(f"pages={args.pages} items/page={args.items} rounds={args.rounds} warc_max={args.warc_mb} MiB; WARCs per "
          f"harvest: local {warcs['local']}, object storage {warcs['s3']}; left in staging: {len(left)}; "
          f"load now {load()}")
    print(f"local: median {statistics.median(rates['local']):.1f} pages/s; object storage + PostgreSQL: median "
          f"{statistics.median(rates['s3']):.1f} pages/s; SeaweedFS CPU per harvest: median "
          f"{statistics.median(store_cpu):.2f} s")
    print(f"ratio object storage/local: median of rounds {statistics.median(ratios):.2f} "
          f"(rounds {', '.join(f'{r:.2f}' for r in ratios)}; target >= 0.8)")


if __name__ == "__main__":
    main()
