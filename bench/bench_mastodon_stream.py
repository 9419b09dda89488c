"""mastodon_stream's own event loop (reads what each read from the connection brings, splits lines in C, parses
only the ids) against Mastodon.py's StreamListener loop (a byte at a time, every status cast into typed
objects) counting the same events, both through the real harvester (recording tap, WARC writing, checkpoints).

    .venv/bin/python bench/bench_mastodon_stream.py [--events 300] [--rounds 3]

The ratio Mastodon.py / swath (medians, same run) is how many times faster swath's loop is. The server runs in
a child process: the first stream connection gets the events and ends, the next one tells the parent to
stop the harvest (so the time is: connect, read every event, one empty backfill page, reconnect).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mastodon import StreamListener  # noqa: E402

from swath.core.config import Config  # noqa: E402
from swath.core.jobs import JobContext  # noqa: E402
from swath.harvesters.run import run_harvest  # noqa: E402
from swath.platforms.mastodon import stream as mastodon_stream  # noqa: E402
from tests.fakes.httpserver import FakeServer, Response, end_chunks, write_chunk  # noqa: E402


def events(n: int) -> bytes:
    status = {"id": "0", "created_at": "2024-03-01T09:00:00.000Z", "content": "<p>" + "words " * 300 + "</p>",
              "account": {"id": "1", "acct": "alice", "url": "https://example.org/@alice"}, "tags": [],
              "media_attachments": [], "mentions": [], "visibility": "public"}
    out = [b":)\n"]
    for i in range(n):
        status["id"] = str(110_000_000_000_000_000 + i)
        out.append(b"event: update\ndata: " + json.dumps(status).encode() + b"\n\n")
    return b"".join(out)


def serve(n: int) -> None:
    """Child process: the instance, an empty timeline and the stream; prints `again` on each reconnect."""
    body, connections = events(n), [0]

    def stream(request) -> Response:
        connections[0] += 1
        if connections[0] > 1:
            print("again", flush=True)

        def write(wfile) -> None:
            if connections[0] == 1:
                for start in range(0, len(body), 1 << 16):
                    write_chunk(wfile, body[start:start + (1 << 16)])
            else:
                time.sleep(30)
            end_chunks(wfile)
        return Response(200, write, content_type="text/event-stream")

    routes = {"/api/v1/instance/": lambda r: Response(200, b'{"urls": {}}'),
              "/api/v2/instance/": lambda r: Response(200, b"{}"),
              "/api/v1/timelines/tag/bench": lambda r: Response(200, b"[]"),
              "/api/v1/streaming/hashtag": stream}
    with FakeServer(routes) as server:
        print(server.url, flush=True)
        sys.stdin.read()


def harvest(n: int, root: Path, name: str) -> float:
    child = subprocess.Popen([sys.executable, __file__, "--serve", str(n)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    url = child.stdout.readline().strip()
    config = dataclasses.replace(Config.from_env({}), data_root=root, status_interval=60.0).with_api_url("mastodon",
                                                                                                         url)
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="bench")
    threading.Thread(target=lambda: (child.stdout.readline(), ctx.stop.set()), daemon=True).start()
    body = {"id": name, "type": "mastodon_stream", "path": f"collections/b/{name}", "collection_set": {"id": "b"},
            "collection": {"id": name}, "seeds": [{"id": "s", "token": "#bench"}]}
    started = time.perf_counter()
    run_harvest(body, routing_key="harvest.start.mastodon.mastodon_stream", ctx=ctx)
    elapsed = time.perf_counter() - started
    child.stdin.close()  # type: ignore[union-attr]
    child.wait(60)
    final = [s for s in statuses if "stats" in s][-1]
    posts = sum(day.get("posts", 0) for day in final["stats"].values())
    assert final["status"] == "completed success" and posts == n, final
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", type=int, default=0)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve)
        return
    recorder = mastodon_stream._Recorder
    ours = recorder.handle_stream
    # Mastodon.py's loop calls on_update with each typed status; it is counted as ours counts it
    recorder.on_update = lambda self, status: self._event("update", json.dumps({"id": str(status["id"])}))
    times: dict[str, list[float]] = {"own": [], "arrivals": []}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in ("own", "arrivals"):  # interleaved, so a busy spell hits both
                recorder.handle_stream = StreamListener.handle_stream if kind == "own" else ours
                times[kind].append(harvest(args.events, Path(tmp), f"{kind}-{r}"))
    theirs, mine = statistics.median(times["own"]), statistics.median(times["arrivals"])
    size = len(events(args.events)) / 1e6
    print(f"{args.events} events, {size:.1f} MB: Mastodon.py's loop {theirs:.2f} s, swath's {mine:.2f} s, "
          f"ratio {theirs / mine:.1f}")


if __name__ == "__main__":
    main()
