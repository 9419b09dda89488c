"""Whole harvests for bench/bench_per_item.py: a REST listing (generic_pages), a stream (generic_stream) and an
OAI-PMH listing (oai_pmh) of N items each, recorded to WARC by the real engine, against servers in a child
process. Cost per item should not grow with N."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from swath.core.config import Config  # noqa: E402
from swath.core.jobs import JobContext  # noqa: E402
from swath.harvesters.run import run_harvest  # noqa: E402
from tests.fakes.httpserver import FakeServer, Request, Response, end_chunks, write_chunk  # noqa: E402
from tests.fakes.oai import GeneratedRepository  # noqa: E402

PER_PAGE = 100


def _pages(n: int) -> Callable[[Request], Response]:
    def handle(req: Request) -> Response:
        page = int(req.arg("page", "0"))
        first, last = page * PER_PAGE, min(n, (page + 1) * PER_PAGE)
        items = [{"id": str(i), "text": f"item {i} " + "words " * 40} for i in range(first, last)]
        following = f"?page={page + 1}" if last < n else None
        return Response(200, json.dumps({"items": items, "next": following}).encode())
    return handle


def _stream(n: int) -> Callable[[Request], Response]:
    def handle(req: Request) -> Response:
        def write(wfile: object) -> None:
            for first in range(0, n, 500):
                write_chunk(wfile, b"".join(b'{"id": "%d", "text": "%s"}\n' % (i, b"words " * 40)
                                            for i in range(first, min(n, first + 500))))
            end_chunks(wfile)
        return Response(200, write, content_type="application/x-ndjson")
    return handle


def serve(sizes: list[int]) -> None:
    """Child process: print one line of JSON naming each server's URLs, run until stdin closes."""
    with ExitStack() as stack:
        rest = stack.enter_context(FakeServer({**{f"/pages{n}": _pages(n) for n in sizes},
                                               **{f"/stream{n}": _stream(n) for n in sizes}}))
        oai = {n: stack.enter_context(GeneratedRepository(count=n, per_page=PER_PAGE).server) for n in sizes}
        print(json.dumps({"rest": rest.url, "oai": {str(n): server.url + "/oai" for n, server in oai.items()}}),
              flush=True)
        sys.stdin.read()


class Servers:
    """The child process serving every size; `harvest(kind, n)` runs one harvest and returns its items."""

    KINDS = ("REST harvest", "stream", "OAI listing")

    def __init__(self, sizes: list[int]) -> None:
        self._child = subprocess.Popen([sys.executable, __file__, *map(str, sizes)], stdin=subprocess.PIPE,
                                       stdout=subprocess.PIPE, text=True)
        assert self._child.stdout is not None
        self.urls = json.loads(self._child.stdout.readline())
        self._tmp = tempfile.TemporaryDirectory()
        self._runs = 0

    def close(self) -> None:
        assert self._child.stdin is not None
        self._child.stdin.close()
        self._child.wait()
        self._tmp.cleanup()

    def harvest(self, kind: str, n: int) -> int:
        self._runs += 1
        htype, key, token = {
            "REST harvest": ("generic_pages", "generic.generic_pages", f"{self.urls['rest']}/pages{n}"),
            "stream": ("generic_stream", "generic.generic_stream", f"{self.urls['rest']}/stream{n}"),
            "OAI listing": ("oai_pmh", "oai_pmh.oai_pmh", self.urls["oai"][str(n)]),
        }[kind]
        config = dataclasses.replace(Config.from_env({}), data_root=Path(self._tmp.name), status_interval=3600)
        published: list = []
        ctx = JobContext(config=config, publish=lambda k, body: published.append((k, body)), service="bench")
        message = {"id": f"bench:{self._runs}", "type": htype, "path": f"c{self._runs}",
                   "seeds": [{"id": "s", "token": token}], "options": {"incremental": False},
                   "collection_set": {"id": "cs"}, "collection": {"id": "c"}}
        run_harvest(message, routing_key=f"harvest.start.{key}", ctx=ctx)
        final = published[-1][1]
        assert final["status"] == "completed success", final
        items = sum(count for day in final["stats"].values() for count in day.values())
        assert items == n, (kind, n, final["stats"])
        return items


if __name__ == "__main__":
    serve([int(arg) for arg in sys.argv[1:]])
