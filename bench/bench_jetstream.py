"""bluesky_jetstream's harvest (recording tap, WARC writing, checkpoints) against a bare reader: websockets'
sync client, orjson parsing each event, each written as a line to a file; both read the same local server
sending N Jetstream events as fast as it can.

    .venv/bin/python bench/bench_jetstream.py [--events 100000] [--rounds 3] [--quick]

Rounds are interleaved (floor, swath, floor, ...), so a busy spell hits both; the ratio swath / floor of the
medians is what carries on a shared machine. The server runs in a child process: the first connection gets the
events and is closed; the harvest reconnects from its cursor, and that second connection tells the parent to
stop it (so swath's time is: connect, read and record every event, reconnect, stop, close the WARC).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson
from websockets.sync.client import connect
from websockets.sync.server import ServerConnection, serve

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.harvesters.run import run_harvest

DID = "did:plc:bench000000000000000000001"


def events(n: int) -> list[str]:
    """Jetstream commit events shaped like the network's posts (about 600 bytes each)."""
    start, out = 1_700_000_000_000_000, []
    for i in range(n):
        record = {"$type": "app.bsky.feed.post", "text": f"post {i} " + "words " * 60,
                  "createdAt": "2024-03-01T09:00:00.000Z", "langs": ["en"]}
        out.append(orjson.dumps({"did": DID, "time_us": start + i, "kind": "commit",
                                 "commit": {"rev": f"rev{i}", "operation": "create", "collection": "app.bsky.feed.post",
                                            "rkey": f"3k{i:011d}", "record": record,
                                            "cid": f"bafyreib{i:040d}"}}).decode())
    return out


def server(n: int) -> None:
    """Child process: every connection without a cursor gets the events then a close; one with a cursor (the
    harvest reconnecting) prints `again` and is held open until the parent stops the harvest."""
    sent = events(n)

    def handle(ws: ServerConnection) -> None:
        assert ws.request is not None
        if "cursor=" in ws.request.path:
            print("again", flush=True)
            try:
                ws.recv()  # until the client closes
            except Exception:
                pass
            return
        for event in sent:
            ws.send(event)
        ws.close()

    with serve(handle, "127.0.0.1", 0, compression=None) as srv:
        host, port = srv.socket.getsockname()[:2]
        print(f"ws://{host}:{port}", flush=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        sys.stdin.read()


def bare(url: str, out: Path) -> int:
    """The floor: read, parse and write each event as a line."""
    count = 0
    with connect(f"{url}/subscribe?wantedCollections=app.bsky.feed.post", compression=None,
                 max_size=1 << 20) as ws, out.open("wb") as fh:
        for message in ws:
            if isinstance(orjson.loads(message).get("time_us"), int):
                count += 1
            fh.write(message.encode() + b"\n")
    return count


def swath(url: str, root: Path, name: str, child: subprocess.Popen, n: int) -> None:
    config = dataclasses.replace(Config.from_env({}), data_root=root, status_interval=60.0)
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="bench")
    assert child.stdout is not None
    out = child.stdout
    threading.Thread(target=lambda: (out.readline(), ctx.stop.set()), daemon=True).start()
    body = {"id": name, "type": "bluesky_jetstream", "path": f"collections/b/{name}", "collection_set": {"id": "b"},
            "collection": {"id": name}, "seeds": [], "options": {"jetstream_url": url}}
    run_harvest(body, routing_key="harvest.start.bluesky.bluesky_jetstream", ctx=ctx)
    final = [s for s in statuses if "stats" in s][-1]
    got = sum(day.get("events", 0) for day in final["stats"].values())
    assert final["status"] == "completed success" and got == n, (final["status"], got)


def round_of(kind: str, n: int, work: Path, r: int) -> float:
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    try:
        started = time.perf_counter()
        if kind == "floor":
            assert bare(url, work / f"bare-{r}.ndjson") == n
        else:
            swath(url, work, f"jet{r}", child, n)
        return time.perf_counter() - started
    finally:
        child.stdin.close()  # type: ignore[union-attr]
        child.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="5,000 events, 3 rounds")
    parser.add_argument("--serve", type=int, default=0)
    args = parser.parse_args()
    if args.serve:
        server(args.serve)
        return
    n = 5_000 if args.quick else args.events
    times: dict[str, list[float]] = {"floor": [], "swath": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in ("floor", "swath"):  # interleaved
                times[kind].append(round_of(kind, n, Path(tmp), r))
            load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"round {r + 1}: floor {n / times['floor'][-1]:,.0f} events/s, swath {n / times['swath'][-1]:,.0f}"
                  f" events/s, ratio {times['floor'][-1] / times['swath'][-1]:.2f}; load {load}", flush=True)
    floor, ours = statistics.median(times["floor"]), statistics.median(times["swath"])
    print(f"{n} events, medians of {args.rounds}: floor {n / floor:,.0f} events/s, swath {n / ours:,.0f} events/s, "
          f"ratio {floor / ours:.2f}")


if __name__ == "__main__":
    main()
