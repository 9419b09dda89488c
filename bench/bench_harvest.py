"""Pages per second through the harvest engine (HTTP exchange -> WARC on disk, digests, state)
against a floor: the same requests client fetching and parsing the same pages, writing nothing.

    .venv/bin/python bench/bench_harvest.py [--pages 400] [--items 20] [--rounds 9] [--quick]

Both run in this process, alternating, best round of each, against the same local server running in a
child process (so the server's work does not share this process's GIL); each round prints the load average.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swath.core.config import Config  # noqa: E402
from swath.core.jobs import JobContext  # noqa: E402
from swath.harvest_job import tune_process  # noqa: E402
from swath.harvesters.run import run_harvest  # noqa: E402
from tests.fakes.httpserver import FakeServer, Response  # noqa: E402

WORDS = ("the a of to and in is it you that was for on are with as I his they be at one have this from or had "
         "by word but what some we can out other were all there when up use your how said an each she which do "
         "their time if will way about many then them write would like so these her long make thing see him two "
         "#archive #data @library https://t.co/x1Y2z3 RT").split()


def page_body(page: int, pages: int, items: int) -> bytes:
    """Tweet-like items (~0.6 KB of JSON each, varied text so it compresses like real data)."""
    rng = random.Random(page)
    rows = [{"id": str(10**17 + page * items + i), "created_at": f"2026-01-0{1 + i % 9}T12:{i % 60:02d}:00.000Z",
             "text": " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 45))),
             "author_id": str(rng.randrange(10**9)), "lang": rng.choice(["en", "de", "fr", "es"]),
             "public_metrics": {"retweet_count": rng.randrange(500), "like_count": rng.randrange(5000)},
             "user": {"id": str(rng.randrange(10**9)), "screen_name": f"user{rng.randrange(10**6)}"}}
            for i in range(items)]
    return json.dumps({"items": rows, "next": f"/pages?page={page + 1}" if page < pages else None}).encode()


def floor(url: str) -> int:
    """The same client, following the same pages, no recording."""
    session, n = requests.Session(), 0
    while url:
        response = session.get(url, params={"api_key": "bench-key-123"})
        page = response.json()
        n += 1
        url = requests.compat.urljoin(response.url, page["next"]) if page["next"] else None
    session.close()
    return n


def engine(url: str, root: Path, round_no: int) -> int:
    config = dataclasses.replace(Config.from_env({}), data_root=root, status_interval=3600)
    published: list = []
    ctx = JobContext(config=config, publish=lambda key, body: published.append((key, body)), service="bench")
    message = {"id": f"bench:{round_no}", "type": "generic_pages", "path": f"c{round_no}",
               "seeds": [{"id": "s", "token": url}], "credentials": {"api_key": "bench-key-123"},
               "collection_set": {"id": "cs"}, "collection": {"id": "c"}}
    run_harvest(message, routing_key="harvest.start.generic.generic_pages", ctx=ctx)
    assert published[-1][1]["status"] == "completed success", published[-1]
    return sum(n for day in published[-1][1]["stats"].values() for n in day.values()) // items_per_page


def load() -> str:
    return " ".join(f"{n:.2f}" for n in os.getloadavg())


def serve(pages: int, items: int) -> None:
    """Child process: serve the pages, print the URL, run until stdin closes."""
    bodies = {p: page_body(p, pages, items) for p in range(1, pages + 1)}
    with FakeServer({"/pages": lambda req: Response(200, bodies[int(req.arg("page", "1"))])}) as server:
        print(server.url + "/pages", flush=True)
        sys.stdin.read()


def main() -> None:
    global items_per_page
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--quick", action="store_true", help="100 pages, 3 rounds")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.quick:
        args.pages, args.rounds = 100, 3
    if args.serve:
        return serve(args.pages, args.items)
    tune_process(Config.from_env(os.environ))  # as a harvester worker does: SWATH_SWITCH_INTERVAL
    items_per_page = args.items
    bodies = {p: page_body(p, args.pages, args.items) for p in range(1, args.pages + 1)}
    child = subprocess.Popen([sys.executable, __file__, "--serve", "--pages", str(args.pages), "--items",
                              str(args.items)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    rates: dict[str, list[float]] = {"floor": [], "engine": []}
    cpu: dict[str, list[float]] = {"floor": [], "engine": []}
    with tempfile.TemporaryDirectory() as tmp:
        url = child.stdout.readline().strip()
        for round_no in range(args.rounds):
            for name in ("floor", "engine"):
                began, cpu_began = time.perf_counter(), time.process_time()
                pages = floor(url) if name == "floor" else engine(url, Path(tmp), round_no)
                elapsed, cpu_used = time.perf_counter() - began, time.process_time() - cpu_began
                assert pages == args.pages, (name, pages)
                rates[name].append(pages / elapsed)
                cpu[name].append(cpu_used * 1000 / pages)
            print(f"round {round_no + 1}: floor {rates['floor'][-1]:7.1f} engine {rates['engine'][-1]:7.1f} pages/s"
                  f"  ratio {rates['engine'][-1] / rates['floor'][-1]:.2f}  load {load()}", file=sys.stderr)
        warc_bytes = sum(p.stat().st_size for p in Path(tmp).rglob("*.warc.gz"))
    child.stdin.close()
    child.wait()
    ratios = [e / f for e, f in zip(rates["engine"], rates["floor"])]
    page_kb = sum(map(len, bodies.values())) / len(bodies) / 1024
    print(f"pages={args.pages} items/page={args.items} page_size={page_kb:.1f}KiB rounds={args.rounds} "
          f"warc_bytes_total={warc_bytes} load_after={load()}")
    print(f"floor (requests, no writing): best {max(rates['floor']):.1f} pages/s, "
          f"CPU {statistics.median(cpu['floor']):.3f} ms/page (median)")
    print(f"engine (recorded to WARC):    best {max(rates['engine']):.1f} pages/s, "
          f"CPU {statistics.median(cpu['engine']):.3f} ms/page (median, all threads)")
    print(f"ratio engine/floor: median of rounds {statistics.median(ratios):.2f}, "
          f"best/best {max(rates['engine']) / max(rates['floor']):.2f}  (target >= 0.67)")

items_per_page = 20

if __name__ == "__main__":
    main()
