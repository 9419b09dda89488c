"""A real HTTP server on 127.0.0.1 for tests: routes are plain functions, every request is logged."""

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
                self.send_response(resp.status)
                self.send_header("Content-Type", resp.content_type)
                for name, value in resp.headers.items():
                    self.send_header(name, value)
                if callable(resp.body):
                    self.send_header("Transfer-Encoding", "chunked")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    self.close_connection = True
                    try:
                        resp.body(self.wfile)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                self.send_header("Content-Length", str(len(resp.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(resp.body)

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

    def __enter__(self) -> FakeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def write_chunk(wfile, data: bytes) -> None:
    """Write one chunk of a chunked response and flush it (for streaming endpoints)."""
    wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
    wfile.flush()


def end_chunks(wfile) -> None:
    wfile.write(b"0\r\n\r\n")
    wfile.flush()
