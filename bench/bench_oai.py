"""Records per second of an `oai_pmh` harvest (listing -> mapped dataset records in WARCs) against Sickle
listing the same repository (parsing every record, writing nothing).

    .venv/bin/python bench/bench_oai.py [--records 10000] [--per-page 100] [--rounds 3] [--quick] [--threads]

Sickle is the peer, not a dependency: `pip install -e '.[bench]'` (or `pip install Sickle==0.7.0`).
The repository (tests/fakes/oai.py GeneratedRepository, every 17th record deleted) runs in a child process,
so its work does not share this process's GIL; rounds alternate Sickle and swath; medians; each round
prints the load average, since the 2-core machine is shared. `--threads` also prints each swath round's CPU
by thread (the platform's fetching thread, the WARC writer), read from /proc (Linux).
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swath.core.config import Config  # noqa: E402
from swath.core.jobs import JobContext  # noqa: E402
from swath.harvest_job import tune_process  # noqa: E402
from swath.harvesters.run import run_harvest  # noqa: E402
from tests.fakes.oai import GeneratedRepository  # noqa: E402

DELETED_EVERY = 17  # 588 of 10,000 deleted, as in the measurement


def sickle(url: str) -> int:
    from sickle import Sickle  # the peer, installed for benches only

    return sum(1 for _ in Sickle(url).ListRecords(metadataPrefix="oai_dc", ignore_deleted=False))


def swath(url: str, root: Path, round_no: int) -> int:
    config = dataclasses.replace(Config.from_env({}), data_root=root, status_interval=3600)
    published: list = []
    ctx = JobContext(config=config, publish=lambda key, body: published.append((key, body)), service="bench")
    message = {"id": f"bench:{round_no}", "type": "oai_pmh", "path": f"c{round_no}",
               "seeds": [{"id": "s", "token": url}], "options": {"incremental": False},
               "collection_set": {"id": "cs"}, "collection": {"id": "c"}}
    run_harvest(message, routing_key="harvest.start.oai_pmh.oai_pmh", ctx=ctx)
    status = published[-1][1]
    assert status["status"] == "completed success", status
    return sum(n for day in status["stats"].values() for n in day.values())


class ThreadCPU:
    """CPU seconds of each live thread of this process by Python thread name, sampled from /proc every 20 ms
    (a thread's figure is its last sample: it has ended by the time a harvest returns)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], float] = {}
        self.tick = os.sysconf("SC_CLK_TCK")
        threading.Thread(target=self._sample, daemon=True, name="thread-cpu").start()

    def _sample(self) -> None:
        names: dict[str, str] = {}  # a thread keeps the name it had while Python listed it (ending, it is not)
        while True:
            names.update((str(t.native_id), t.name.split(":")[0]) for t in threading.enumerate())
            for tid in os.listdir("/proc/self/task"):
                try:
                    stat = Path(f"/proc/self/task/{tid}/stat").read_text()
                except OSError:
                    continue
                fields = stat[stat.rindex(")") + 2:].split()
                self.seen[(tid, names.get(tid, "other"))] = (int(fields[11]) + int(fields[12])) / self.tick
            time.sleep(0.02)

    def since(self, before: dict[tuple[str, str], float]) -> dict[str, float]:
        time.sleep(0.05)  # one more sample of the threads that have just ended
        by_name: dict[str, float] = collections.Counter()
        for key, seconds in self.seen.items():
            by_name[key[1]] += seconds - before.get(key, 0.0)
        return {name: seconds for name, seconds in by_name.items() if seconds > 0}


def serve(records: int, per_page: int) -> None:
    """Child process: serve the repository, print its URL, run until stdin closes."""
    repo = GeneratedRepository(count=records, per_page=per_page, deleted_every=DELETED_EVERY)
    with repo.server as server:
        print(server.url + "/oai", flush=True)
        sys.stdin.read()


def load() -> str:
    return " ".join(f"{n:.2f}" for n in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--per-page", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 records, 3 rounds")
    parser.add_argument("--threads", action="store_true", help="swath's CPU per thread in each round")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.records, args.rounds = 2_000, 3
    if args.serve:
        return serve(args.records, args.per_page)
    tune_process(Config.from_env(os.environ))  # as a harvester worker does: SWATH_SWITCH_INTERVAL
    child = subprocess.Popen([sys.executable, __file__, "--serve", "--records", str(args.records), "--per-page",
                              str(args.per_page)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdin is not None and child.stdout is not None
    threads = ThreadCPU() if args.threads else None
    rates: dict[str, list[float]] = {"sickle": [], "swath": []}
    cpu: dict[str, list[float]] = {"sickle": [], "swath": []}  # process CPU (all threads), ms per 1,000 records
    try:
        url = child.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            for round_no in range(args.rounds):
                for name in ("sickle", "swath"):
                    sampled = dict(threads.seen) if threads else {}
                    began, cpu_began = time.perf_counter(), time.process_time()
                    records = sickle(url) if name == "sickle" else swath(url, Path(tmp), round_no)
                    rates[name].append(records / (time.perf_counter() - began))
                    cpu[name].append((time.process_time() - cpu_began) * 1e6 / records)
                    assert records == args.records, (name, records)
                    if threads and name == "swath":
                        by_thread = threads.since(sampled)
                print(f"round {round_no + 1}: sickle {rates['sickle'][-1]:7.0f} swath {rates['swath'][-1]:7.0f} "
                      f"records/s  ratio {rates['swath'][-1] / rates['sickle'][-1]:.2f}  load {load()}",
                      file=sys.stderr)
                if threads:  # 10 ms ticks: at 10,000 records, 1 ms per 1,000
                    print("  swath CPU by thread, ms per 1,000 records: " + ", ".join(
                        f"{n} {sec * 1e6 / args.records:.0f}" for n, sec in sorted(by_thread.items())), file=sys.stderr)
    finally:
        child.stdin.close()
        child.wait()
    ratios = [w / s for w, s in zip(rates["swath"], rates["sickle"])]
    print(f"records={args.records} deleted={args.records // DELETED_EVERY} per_page={args.per_page} "
          f"rounds={args.rounds} load_after={load()}")
    print(f"sickle (listing only): median {statistics.median(rates['sickle']):.0f} records/s, "
          f"CPU {statistics.median(cpu['sickle']):.1f} ms per 1,000 records")
    print(f"swath (harvested to WARC): median {statistics.median(rates['swath']):.0f} records/s, "
          f"CPU {statistics.median(cpu['swath']):.1f} ms per 1,000 records (all threads)")
    print(f"ratio swath/sickle: median of rounds {statistics.median(ratios):.2f}  (target >= 0.5)")


if __name__ == "__main__":
    main()
