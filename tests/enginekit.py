"""Helpers shared by the engine tests (no tests here): a fake paged/streaming API, a collecting
publish that validates every message against its schema, and WARC read-back."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from swath.core.jobs import JobContext
from swath.messages.validation import validate
from tests.fakes.httpserver import FakeServer, Request, Response, write_chunk

VENV_BIN = Path(sys.executable).parent
SECRET = "s3cr3t-api-key-9f8e7d"
BEARER = "bearer-tok-0a1b2c3d4e"


class HarvestProcess:
    """A harvest run in a subprocess that prints what it publishes as JSON lines (`swath harvest run --json`, the
    embedded runner): its statuses and warc_created bodies collected as they come, `proc` to signal it."""

    def __init__(self, args: list[str], env: dict[str, str], *, cwd: Path, timeout: float) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd)
        self.timeout = timeout
        self.statuses: list[dict] = []
        self.warcs: list[dict] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                body = json.loads(line)
            except ValueError:
                continue
            if isinstance(body, dict) and str(body.get("routing_key")).startswith("harvest.status."):
                self.statuses.append(body["message"])
            elif isinstance(body, dict) and body.get("routing_key") == "warc_created":
                self.warcs.append(body["message"]["warc"])

    def wait(self) -> int:
        code = self.proc.wait(self.timeout)
        self._reader.join(30)
        return code


class Collected:
    """A publish function keeping (routing_key, body) pairs, each validated by its JSON Schema."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, routing_key: str, body: dict[str, Any]) -> None:
        validate("warc_created" if routing_key == "warc_created" else "harvest_status", body)
        json.dumps(body)  # what a broker would send must be JSON
        with self._lock:
            self.messages.append((routing_key, body))

    @property
    def statuses(self) -> list[dict[str, Any]]:
        return [b for k, b in list(self.messages) if k.startswith("harvest.status.")]

    @property
    def warcs(self) -> list[dict[str, Any]]:
        return [b for k, b in list(self.messages) if k == "warc_created"]

    def kinds(self) -> list[str]:
        return ["warc" if k == "warc_created" else b["status"] for k, b in list(self.messages)]

    def flow(self) -> list[str]:
        """kinds() without the periodic running statuses after the first (their number depends on time)."""
        kinds = self.kinds()
        return kinds[:1] + [k for k in kinds[1:] if k != "running"]


def context(config, **kwargs: Any) -> tuple[JobContext, Collected]:
    published = Collected()
    return JobContext(config=config, publish=published, service="test", **kwargs), published


def start_message(url: str, *, harvest_id: str = "test:1", type_: str = "generic_pages", path: str = "coll",
                  options: dict | None = None, credentials: dict | None = None) -> dict[str, Any]:
    return {
        "id": harvest_id,
        "type": type_,
        "path": path,
        "seeds": [{"id": "seed-1", "token": url}],
        "options": options or {},
        "credentials": credentials if credentials is not None else {"api_key": SECRET},
        "collection_set": {"id": "set-1"},
        "collection": {"id": "coll-1"},
    }


def routing_key(type_: str = "generic_pages") -> str:
    return f"harvest.start.generic.{type_}"


class PagedApi:
    """/pages?page=n: `per_page` items with consecutive ids and a relative `next` link; checks api_key."""

    def __init__(self, server: FakeServer, *, pages: int, per_page: int = 5, delay: float = 0.0) -> None:
        self.pages, self.per_page, self.delay = pages, per_page, delay
        self.served: list[int] = []  # item ids in the order they were sent
        self._lock = threading.Lock()
        server.route("/pages")(self.handle)

    def handle(self, request: Request) -> Response:
        if request.arg("api_key") != SECRET:
            return Response(401, b'{"error": "bad key"}')
        if self.delay:
            time.sleep(self.delay)
        page = int(request.arg("page", "1"))
        since = int(request.arg("since_id", "-1"))
        ids = [i for i in range((page - 1) * self.per_page, page * self.per_page) if i > since]
        with self._lock:
            self.served.extend(ids)
        body = {"items": [{"id": i, "text": f"item {i}"} for i in ids],
                "next": f"/pages?page={page + 1}" if page < self.pages else None}
        return Response(200, json.dumps(body).encode())


class StreamApi:
    """/stream: chunked newline-delimited JSON, one item every `every` seconds until the client goes."""

    def __init__(self, server: FakeServer, *, path: str = "/stream", every: float = 0.005) -> None:
        self.every = every
        self.connections = 0
        server.route(path)(self.handle)

    def handle(self, request: Request) -> Response:
        self.connections += 1

        def body(wfile) -> None:
            n = 0
            while True:
                write_chunk(wfile, json.dumps({"id": n, "text": "x" * 40}).encode() + b"\r\n")
                n += 1
                time.sleep(self.every)

        return Response(200, body, content_type="application/x-ndjson")


def warc_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.warc.gz"))


def read_records(paths: list[Path]) -> list[Any]:
    """Every record of the WARCs as (type, uri, status, http headers, decoded payload, warc headers)."""
    out = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                status = rec.http_headers.get_statuscode() if rec.http_headers and rec.rec_type == "response" else None
                out.append((rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI"), status,
                            rec.http_headers, rec.content_stream().read(), rec.rec_headers))
    return out


def page_item_ids(paths: list[Path]) -> list[int]:
    ids = []
    for rtype, _, status, _, payload, _ in read_records(paths):
        if rtype == "response" and status == "200":
            ids.extend(item["id"] for item in json.loads(payload)["items"])
    return ids


def warcio_check(paths: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "warcio"), "check", *map(str, paths)], capture_output=True, text=True)


def raw_bytes(paths: list[Path]) -> bytes:
    """The WARCs both as stored and decompressed, for grepping."""
    import gzip

    return b"".join(p.read_bytes() + gzip.decompress(p.read_bytes()) for p in paths)


def wait_for(predicate: Callable[[], bool], timeout: float = 120.0, what: str = "") -> None:
    """Poll until `predicate()` holds; the deadline only guards against a hang, so it is generous and its
    failure names what was awaited (`what`, else the predicate's source line)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting after {timeout:g}s for {what or _source(predicate)}")
        time.sleep(0.02)


def _source(predicate: Callable[[], bool]) -> str:
    try:
        return inspect.getsource(predicate).strip()
    except (OSError, TypeError):  # a builtin or a callable made at run time
        return repr(predicate)


def harvest_thread(body: dict[str, Any], *, routing_key: str, ctx: JobContext) -> tuple[threading.Thread, list[Any]]:
    """`run_harvest` started on a thread; the list gets "returned", or the exception it raised."""
    from swath.harvesters.run import run_harvest

    outcome: list[Any] = []

    def run() -> None:
        try:
            run_harvest(body, routing_key=routing_key, ctx=ctx)
            outcome.append("returned")
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            outcome.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, outcome
