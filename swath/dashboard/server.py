"""The dashboard's HTTP server: GET / (HTML), /live.json (its changing parts, which the page's live.js puts in
place), /api/status (the same snapshot as JSON), /healthz, and the web application's stylesheet and live.js at
/static/ (the page's only other files)."""

from __future__ import annotations

import base64
import binascii
import hmac
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson

from swath.core.config import Config
from swath.shared.snapshot import gather
from swath.shared.status_page import parts, render
from swath.store import Store
from swath.store.models import utcnow

log = logging.getLogger(__name__)
STATIC = Path(__file__).resolve().parents[1] / "web" / "static"
FILES = {"/static/app.css": (STATIC / "app.css", "text/css; charset=utf-8"),
         "/static/live.js": (STATIC / "live.js", "text/javascript; charset=utf-8")}


IDLE_TIMEOUT = 60.0  # seconds a connection may wait between bytes of a request before the dashboard hangs up


class Dashboard:
    def __init__(self, *, config: Config, store: Store, host: str = "127.0.0.1", port: int = 8080,
                 refresh: int = 10, management_url: str | None = None, idle_timeout: float = IDLE_TIMEOUT) -> None:
        self.config, self.store, self.refresh, self.management_url = config, store, refresh, management_url
        dashboard = self

        class Handler(BaseHTTPRequestHandler):
            timeout = idle_timeout  # each connection holds a thread: one that stops sending is closed

            def log_message(self, fmt: str, *args: object) -> None:
                log.debug(fmt, *args)

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/healthz":
                    return self._send(200, b"ok\n", "text/plain")
                if path in FILES:
                    file, content_type = FILES[path]
                    return self._send(200, file.read_bytes(), content_type)
                if path not in ("/", "/api/status", "/live.json"):
                    return self._send(404, b"not found\n", "text/plain")
                if not authorised(self.headers.get("Authorization", ""), dashboard.config.dashboard_token):
                    return self._send(401, b"this dashboard needs its token (SWATH_DASHBOARD_TOKEN)\n", "text/plain",
                                      extra={"WWW-Authenticate": 'Basic realm="swath dashboard"'})
                try:
                    snap = gather(config=dashboard.config, store=dashboard.store,
                                  management_url=dashboard.management_url)
                except Exception as exc:  # the store is away: say so instead of a broken page
                    log.exception("dashboard snapshot failed")
                    return self._send(503, f"store unavailable: {type(exc).__name__}\n".encode(), "text/plain")
                if path == "/api/status":
                    return self._send(200, orjson.dumps(snap.to_dict()), "application/json")
                generated = utcnow().isoformat(timespec="seconds") + "Z"
                if path == "/live.json":
                    return self._send(200, orjson.dumps(parts(snap, generated=generated)), "application/json")
                page = render(snap, generated=generated, refresh=dashboard.refresh, every=dashboard.refresh,
                              live_url="/live.json")
                self._send(200, page.encode(), "text/html; charset=utf-8")

            def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        assert isinstance(host, str)  # typeshed allows bytes; a bound AF_INET socket names its host in str
        return f"http://{host}:{port}/"

    def serve_forever(self) -> None:
        self.httpd.serve_forever()

    def start(self) -> Dashboard:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True, name="dashboard")
        self._thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def authorised(header: str, token: str) -> bool:
    """No token set: open (the listener is on this machine only: core/hosts.is_loopback). Else `Bearer TOKEN` (scripts)
    or Basic with TOKEN as the password (a browser's prompt; any user name)."""
    if not token:
        return True
    scheme, _, value = header.partition(" ")
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value.strip(), validate=True).decode("utf-8", "replace").partition(":")[2]
        except (binascii.Error, ValueError):
            return False
    elif scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(value.strip().encode(), token.encode())

