"""A real HTTP server on 127.0.0.1 for tests: routes are plain functions, every request is logged with the
status and the exact body bytes that went out for it (fidelity tests compare those with the WARC)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


@dataclass
class Request:
    method: str
    path: str  # without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    status: int | None = None  # of the answer, once it was sent (None: none yet, or the connection was dropped)
    sent: bytes | None = None  # the answer's body as it went out (a chunked one de-chunked), once it ended

    def arg(self, name: str, default: str | None = None) -> str | None:
        values = self.query.get(name)
        return values[0] if values else default


@dataclass
class Response:
    status: int = 200
    body: bytes | Callable[[object], None] = b""  # bytes, or a function writing to the socket file
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"


Route = Callable[[Request], Response]
TAP_LIMIT = 32 << 20  # a streamed answer longer than this is not kept in the log
HANG_UP = 0  # a Response with this status closes the connection without an answer: a connection error


class FakeServer:
    """`routes` maps (method, path) or path to a function; unknown paths are 404."""

    def __init__(self, routes: dict | None = None) -> None:
        self.routes: dict = dict(routes or {})
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # headers and body go out in two writes; with Nagle on each response waits on a delayed ACK
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

            def _handle(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                req = Request(
                    method=self.command,
                    path=split.path,
                    query=parse_qs(split.query, keep_blank_values=True),
                    headers={k: v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                )
                with server._lock:
                    server.requests.append(req)
                route = server.routes.get((self.command, split.path)) or server.routes.get(split.path)
                resp = route(req) if route else Response(404, b'{"error": "not found"}')
                if resp.status == HANG_UP:
                    self.close_connection = True
                    return
                if callable(resp.body):
                    self._stream(req, resp)
                    return
                # logged before it goes out, so a client that has read it always finds it in the log
                req.status, req.sent = resp.status, b"" if self.command == "HEAD" else resp.body
                self._send_head(resp)
                self.send_header("Content-Length", str(len(resp.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(resp.body)

            def _send_head(self, resp: Response) -> None:
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                for name, value in resp.headers.items():
                    self.send_header(name, value)

            def _stream(self, req: Request, resp: Response) -> None:
                self._send_head(resp)
                self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                tap = _Tap(self.wfile)
                try:
                    resp.body(tap)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    req.status, req.sent = resp.status, tap.sent()

            do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        # a short poll so shutdown() at the end of each test returns at once
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def route(self, path: str, method: str | None = None) -> Callable[[Route], Route]:
        def register(fn: Route) -> Route:
            self.routes[(method, path) if method else path] = fn
            return fn

        return register

    def requests_to(self, path: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.path == path]

    def served(self, path_prefix: str = "", status: int | None = 200) -> list[Request]:
        """The requests answered on paths starting with `path_prefix` (with that status), in arrival order;
        each one's `sent` is the body that went out."""
        with self._lock:
            return [r for r in self.requests if r.sent is not None and r.path.startswith(path_prefix)
                    and (status is None or r.status == status)]

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Tap:
    """The socket file of a streamed answer, keeping a copy of what was written (chunk framing included) up to
    TAP_LIMIT bytes: a test streaming hundreds of megabytes at a client must not hold them all."""

    def __init__(self, wfile) -> None:
        self._wfile = wfile
        self.written: list[bytes] = []
        self.size = 0

    def write(self, data: bytes) -> int:
        self.size += len(data)
        if self.size <= TAP_LIMIT:
            self.written.append(bytes(data))
        return self._wfile.write(data)

    def sent(self) -> bytes | None:
        """The payload written, or None past the limit (then only its size is known)."""
        return dechunk(b"".join(self.written)) if self.size <= TAP_LIMIT else None

    def flush(self) -> None:
        self._wfile.flush()


def dechunk(raw: bytes) -> bytes:
    """The payload of chunked transfer coding (up to where it stops: a dropped stream ends mid-way)."""
    out, at = bytearray(), 0
    while (eol := raw.find(b"\r\n", at)) >= 0:
        size = int(raw[at:eol].split(b";")[0] or b"0", 16)
        if size == 0:
            break
        out += raw[eol + 2:eol + 2 + size]
        at = eol + 2 + size + 2
    return bytes(out)


def write_chunk(wfile, data: bytes) -> None:
    """Write one chunk of a chunked response and flush it (for streaming endpoints)."""
    wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    wfile.flush()


def end_chunks(wfile) -> None:
    wfile.write(b"0\r\n\r\n")
    wfile.flush()
