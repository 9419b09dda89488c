"""Cost per item of the structures a run keeps as it goes, from 1,000 to 100,000 items: it should stay flat.

    .venv/bin/python bench/bench_per_item.py [--sizes 1000 10000 100000] [--rounds 3] [--quick] [--no-harvests]

Each structure gets N distinct items in one go, as a fast harvest would give it within the capture
clock's 120 s window: the capture clock (distinct URIs), an item's WARC record (redacted, dated, digested),
a listing's page guard (ids and cursors), the export's dedupe set (batches of 100 keys) and the ledger's
counts. Then whole harvests of N items through the engine to WARC (bench/per_item_harvests.py): a REST
listing, a stream and an OAI-PMH listing. Sizes alternate within each round; medians of the rounds; the
load average is printed per round; CPU time (this process, all threads) and wall-clock time are shown.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swath.exporters.dedupe import SeenIds  # noqa: E402
from swath.harvesters.capture import CaptureClock  # noqa: E402
from swath.harvesters.ledger import Ledger  # noqa: E402
from swath.harvesters.pages import PageGuard  # noqa: E402
from swath.harvesters.redaction import Redactor  # noqa: E402
from swath.harvesters.warc_records import RecordFactory  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from per_item_harvests import Servers  # noqa: E402

T0 = "2026-11-27T03:00:00Z"
PAYLOAD = b'{"type": "dataset", "dataset": {"title": "a record", "description": "' + b"x" * 600 + b'"}}'


def clock(n: int) -> None:
    date = CaptureClock().date
    for i in range(n):
        date(f"https://repo.example.org/oai?verb=GetRecord&identifier=oai:x:{i}", T0)


def records(n: int) -> None:
    factory = RecordFactory(redactor=Redactor(["bench-secret-value-123"]))
    for i in range(n):
        factory.plain(uri=f"urn:swath:oai_pmh:s:oai%3Ax%3A{i}", record_type="resource", payload=PAYLOAD,
                      content_type="application/json",
                      headers={"WARC-Swath-Item-Type": "dataset", "WARC-Swath-Remote-Id": f"oai:x:{i}",
                               "WARC-Swath-Item-URI": f"https://repo.example.org/oai?verb=GetRecord&id={i}"})


def guard(n: int) -> None:
    pages = PageGuard(what="bench", max_pages=None)
    for page in range(0, n, 100):
        pages.cursor(f"token-{page}")
        pages.items(range(page, min(page + 100, n)))


def dedupe(n: int) -> None:
    seen = SeenIds(spill_dir=Path(tempfile.gettempdir()))  # spills only past a million ids
    for first in range(0, n, 100):
        seen.add_keys("t", list(range(first, min(first + 100, n))))
        seen.add_keys("t", [first])  # a repeat now and then: the slower path
    seen.close()


def ledger(n: int) -> None:
    counts = Ledger(redactor=Redactor())
    for _ in range(n):
        counts.count("items")


CASES: dict[str, Callable[[int], None]] = {"capture clock": clock, "item record": records, "page guard": guard,
                                           "dedupe set": dedupe, "ledger count": ledger}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 items, one round")
    parser.add_argument("--no-harvests", action="store_true", help="the structures only")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.rounds = [1_000, 10_000], 1
    cases = dict(CASES)
    servers = None if args.no_harvests else Servers(args.sizes)
    if servers is not None:
        cases.update({kind: (lambda n, kind=kind: servers.harvest(kind, n)) for kind in Servers.KINDS})
    costs: dict[tuple[str, int], list[float]] = {}  # wall time
    cpu: dict[tuple[str, int], list[float]] = {}  # this process's CPU time, all threads (the servers are not in it)
    try:
        for round_no in range(args.rounds):
            for size in args.sizes:
                for name, case in cases.items():
                    began, cpu_began = time.perf_counter(), time.process_time()
                    case(size)
                    costs.setdefault((name, size), []).append((time.perf_counter() - began) / size * 1e6)
                    cpu.setdefault((name, size), []).append((time.process_time() - cpu_began) / size * 1e6)
            print(f"round {round_no + 1} done, load {' '.join(f'{x:.2f}' for x in os.getloadavg())}",
                  file=sys.stderr)
    finally:
        if servers is not None:
            servers.close()
    # a harvest's fixed start and end (~0.2-0.5 s) are most of its cost at 1,000 items: the last ratio (largest
    # size / the one before) is the one that shows growth. CPU time is what carries on a busy machine.
    for title, table in (("CPU µs per item", cpu), ("wall-clock µs per item", costs)):
        print(f"{title}, median of {args.rounds} round(s); ratios: largest size / smallest, / the one before")
        print(f"{'':14}" + "".join(f"{size:>12,}" for size in args.sizes) + f"{'ratio':>8}{'last':>8}")
        for name in cases:
            row = [statistics.median(table[(name, size)]) for size in args.sizes]
            print(f"{name:14}" + "".join(f"{c:12.2f}" for c in row) + f"{row[-1] / row[0]:8.2f}"
                  f"{row[-1] / row[-2]:8.2f}")


if __name__ == "__main__":
    main()
