"""Shared pieces of the fake social platforms (Twitter, Flickr, Tumblr, Mastodon, Bluesky): failure switches,
`bodies()` from the server's log of every body sent (so tests compare the WARC's responses with the exact bytes
that went out), and `publishing`, a clock of their own for the fakes that keep adding items."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from tests.fakes.httpserver import HANG_UP, FakeServer, Request, Response, Route


@dataclass
class Faults:
    """Failure switches: the next `disconnects` requests get no answer (the connection is closed: HANG_UP), then
    the next `rate_limited` get 429, then the next `server_errors` get 5xx; `unauthorized` answers every request
    with 401. `path` limits the switches to paths starting with it."""

    disconnects: int = 0
    rate_limited: int = 0
    server_errors: int = 0
    unauthorized: bool = False
    reset_seconds: int = 1  # how far in the future the rate-limit window resets
    path: str = ""
    served: list[tuple[int, str]] = field(default_factory=list)  # (status, path) of each fault served
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def next_status(self, path: str) -> int | None:
        if not path.startswith(self.path):
            return None
        with self._lock:
            status = None
            if self.unauthorized:
                status = 401
            elif self.disconnects > 0:
                self.disconnects -= 1
                status = HANG_UP
            elif self.rate_limited > 0:
                self.rate_limited -= 1
                status = 429
            elif self.server_errors > 0:
                self.server_errors -= 1
                status = 503
            if status is not None:
                self.served.append((status, path))
            return status


class FakePlatform:
    """A FakeServer whose routes pass through the fault switches; its log holds what each answer sent."""

    def __init__(self) -> None:
        self.server = FakeServer()
        # headers and body go out in two writes; without this each response waits ~40 ms on delayed ACKs
        self.server.httpd.RequestHandlerClass.disable_nagle_algorithm = True
        # a short poll so closing the server at the end of each test costs 50 ms, not 500
        self.server.thread = threading.Thread(target=self.server.httpd.serve_forever, args=(0.05,), daemon=True)
        self.faults = Faults()
        self.closed = threading.Event()  # set on exit so endless stream bodies end
        self._lock = threading.Lock()  # the fakes' data, changed by their publishing threads

    @property
    def url(self) -> str:
        return self.server.url

    def fault_response(self, status: int, req: Request) -> Response:
        """The platform's own body and headers for a 401, 429 or 5xx."""
        raise NotImplementedError

    def add_route(self, path: str, fn: Route, method: str | None = None) -> None:
        def routed(req: Request) -> Response:
            status = self.faults.next_status(req.path)
            if status is None:
                resp = fn(req)
            else:
                resp = Response(HANG_UP) if status == HANG_UP else self.fault_response(status, req)
            if callable(resp.body):
                resp.body = _chunked(resp.body)
            return resp

        self.server.routes[(method, path) if method else path] = routed

    def bodies(self, path_prefix: str = "", status: int | None = 200) -> list[bytes]:
        """Every body sent on paths starting with `path_prefix` (a stream's: everything written, keep-alives
        included, once its connection ended), from the server's log."""
        return [req.sent or b"" for req in self.server.served(path_prefix, status)]

    def wait_bodies(self, path_prefix: str, n: int, timeout: float = 120.0) -> list[bytes]:
        """The bodies sent on that path once there are `n` (a stream's is logged when its connection ends)."""
        deadline = time.monotonic() + timeout
        while len(bodies := self.bodies(path_prefix)) < n:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(bodies)} of {n} bodies sent on {path_prefix} after {timeout:g}s")
            time.sleep(0.02)
        return bodies

    def __enter__(self) -> FakePlatform:
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed.set()
        self.server.__exit__(*exc)


@contextmanager
def publishing(publish: Callable[[], object] | None, *, every: float = 0.05) -> Iterator[list[object]]:
    """Calls `publish` every `every` seconds on a thread of its own until the block ends: a platform that keeps
    adding items whether or not anyone is listening, so a harvest paging meanwhile can show gaps. The list
    yielded collects what each call returned."""
    published: list[object] = []
    done = threading.Event()

    def run() -> None:
        while publish is not None and not done.wait(every):
            published.append(publish())

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield published
    finally:
        done.set()
        thread.join(30)


def _chunked(write: Callable) -> Callable:
    """A stream body written through `_Chunks` (write_payload/end) instead of the raw socket file."""
    return lambda wfile: write(_Chunks(wfile))


class _Chunks:
    """Writes each payload as one chunk of the chunked response, and flushes it."""

    def __init__(self, wfile) -> None:
        self._wfile = wfile

    def write_payload(self, data: bytes) -> None:
        self._wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self._wfile.flush()

    def end(self) -> None:
        self._wfile.write(b"0\r\n\r\n")
        self._wfile.flush()


# --- running a harvest against a fake, and reading back what it wrote --------------------------------------


@dataclass
class Outcome:
    """Everything one harvest published, and the response records of the WARCs it reported."""

    sent: list[tuple[str, dict]]

    @property
    def status(self) -> dict:
        return [body for key, body in self.sent if key.startswith("harvest.status.")][-1]

    @property
    def warcs(self) -> list[dict]:
        return [body["warc"] for key, body in self.sent if key == "warc_created"]

    def count(self, label: str) -> int:
        return sum(day.get(label, 0) for day in self.status["stats"].values())

    def codes(self, kind: str) -> list[tuple[str, str | None]]:
        return [(n["code"], n.get("seed_id")) for n in self.status[kind]]

    def records(self, record_type: str = "response") -> list[tuple[str, int, bytes]]:
        """(target URI, HTTP status, payload exactly as stored) of each record of that type."""
        return [(uri, status, payload) for uri, status, payload, _ in self.records_with_headers(record_type)]

    def records_with_headers(self, record_type: str = "response") -> list[tuple[str, int, bytes, dict]]:
        from warcio.archiveiterator import ArchiveIterator

        out = []
        for warc in self.warcs:
            with open(warc["path"], "rb") as fh:
                for rec in ArchiveIterator(fh):
                    if rec.rec_type == record_type:
                        status = int(rec.http_headers.get_statuscode()) if rec.http_headers else 0
                        out.append((rec.rec_headers.get_header("WARC-Target-URI"), status, rec.raw_stream.read(),
                                    dict(rec.rec_headers.headers)))
        return out

    def raw_warc_bytes(self) -> bytes:
        import gzip

        data = b""
        for warc in self.warcs:
            with open(warc["path"], "rb") as fh:
                raw = fh.read()
            data += gzip.decompress(raw) if warc["path"].endswith(".gz") else raw
        return data


def start_body(harvest_type: str, seeds: list[dict], *, credentials: dict, options: dict | None = None,
               harvest_id: str | None = None, path: str = "collections/cs1/c1") -> dict:
    import uuid

    return {
        "id": harvest_id or f"test:{uuid.uuid4().hex[:8]}",
        "type": harvest_type,
        "path": path,
        "seeds": seeds,
        "options": options or {},
        "credentials": credentials,
        "collection_set": {"id": "cs1"},
        "collection": {"id": "c1"},
    }


def run_harvest_job(config, body: dict, *, stop_when: threading.Event | None = None,
                    stop_delay: float = 0.3) -> Outcome:
    """Run the engine's job for one start message, collecting what it publishes; for streams, set
    harvest.stop once `stop_when` is set."""
    from swath.core.jobs import JobContext
    from swath.harvesters import registry
    from swath.harvesters.run import run_harvest
    from swath.messages.routing import key

    sent: list[tuple[str, dict]] = []
    lock = threading.Lock()

    def publish(routing_key: str, message: dict) -> None:
        with lock:
            sent.append((routing_key, message))

    ctx = JobContext(config=config, publish=publish, service="test")
    if stop_when is not None:
        def stopper() -> None:
            if stop_when.wait(240):  # a hang guard: stop_when is set by the fake
                ctx.stop.wait(stop_delay)  # let a few keep-alives through first
            ctx.stop.set()
        threading.Thread(target=stopper, daemon=True).start()
    htype = registry.lookup(body["type"])
    run_harvest(body, routing_key=key("harvest_start", htype.platform, body["type"]), ctx=ctx)
    return Outcome(sent)
