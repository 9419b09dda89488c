"""A stream sent as one long line against the same number of bytes sent as 1 KB lines, both through the
real generic_stream harvester (recording tap, WARC writing, line splitting, counting).

    .venv/bin/python bench/bench_stream_lines.py [--sizes 1 4 16] [--rounds 3]

The ratio single-line / split (medians, same run) should stay near 1 whatever the size: reading a
stream costs its bytes, not the square of its longest line. The server runs in a child process.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swath.core.config import Config  # noqa: E402
from swath.core.jobs import JobContext  # noqa: E402
from swath.harvesters.run import run_harvest  # noqa: E402
from tests.fakes.httpserver import FakeServer, Response, end_chunks, write_chunk  # noqa: E402

MB = 1024 * 1024
LINE = 1024


def body(size: int, single: bool) -> bytes:
    """`size` bytes of newline-delimited JSON: one object, or objects of LINE bytes each."""
    if single:
        head = b'{"id": "big", "text": "'
        return head + b"x" * (size - len(head) - 3) + b'"}\n'
    line = b'{"id": "%08d", "text": "' + b"y" * (LINE - 27) + b'"}\n'
    return b"".join(line.replace(b"%08d", b"%08d" % n) for n in range(size // LINE))


def serve(sizes: list[int]) -> None:
    """Child process: /one/<MB> and /split/<MB>, chunked in 64 KB pieces; runs until stdin closes."""
    bodies = {f"/{kind}/{mb}": body(mb * MB, kind == "one") for mb in sizes for kind in ("one", "split")}

    def route(path: str):
        def handle(request) -> Response:
            def write(wfile) -> None:
                data = bodies[path]
                for start in range(0, len(data), 1 << 16):
                    write_chunk(wfile, data[start:start + (1 << 16)])
                end_chunks(wfile)
            return Response(200, write, content_type="application/x-ndjson")
        return handle

    with FakeServer({path: route(path) for path in bodies}) as server:
        print(server.url, flush=True)
        sys.stdin.read()


def harvest(url: str, root: Path, name: str, expect_items: int) -> float:
    config = dataclasses.replace(Config.from_env({}), data_root=root, status_interval=3600)
    published: list = []
    ctx = JobContext(config=config, publish=lambda key, b: published.append((key, b)), service="bench")
    message = {"id": f"bench:{name}", "type": "generic_stream", "path": name, "seeds": [{"id": "s", "token": url}],
               "collection_set": {"id": "cs"}, "collection": {"id": "c"}}
    began = time.perf_counter()
    run_harvest(message, routing_key="harvest.start.generic.generic_stream", ctx=ctx)
    elapsed = time.perf_counter() - began
    final = published[-1][1]
    items = sum(day.get("items", 0) for day in final["stats"].values())
    assert final["status"] == "completed success" and items == expect_items, (final["status"], items)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4, 16], help="stream sizes in MB")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    child = subprocess.Popen([sys.executable, __file__, "--serve", *map(str, args.sizes)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        base = child.stdout.readline().strip()
        times: dict[tuple[int, str], list[float]] = {}
        with tempfile.TemporaryDirectory() as tmp:
            for round_no in range(args.rounds):  # interleaved, so a slow period hits both layouts
                for mb in args.sizes:
                    for kind, items in (("one", 1), ("split", mb * MB // LINE)):
                        name = f"{kind}-{mb}-{round_no}"
                        elapsed = harvest(f"{base}/{kind}/{mb}", Path(tmp), name, items)
                        times.setdefault((mb, kind), []).append(elapsed)
        print(f"{'MB':>4} {'one line s':>11} {'1 KB lines s':>13} {'ratio':>6}   (medians of {args.rounds} rounds)")
        for mb in args.sizes:
            one, split = statistics.median(times[(mb, "one")]), statistics.median(times[(mb, "split")])
            print(f"{mb:>4} {one:>11.2f} {split:>13.2f} {one / split:>6.2f}")
    finally:
        child.stdin.close()
        child.wait(10)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        serve([int(s) for s in sys.argv[2:]])
    else:
        main()
