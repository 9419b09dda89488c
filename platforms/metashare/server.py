"""A META-SHARE node: serves an LR storage directory over the Harvesting Protocol v1.0 (real HTTP or HTTPS)."""

from __future__ import annotations

import html
import json
import secrets
import ssl
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar
from urllib.parse import parse_qs, urlsplit

from swath.platforms.metashare.errors import MetashareError
from swath.platforms.metashare.protocol import (
    INVENTORY_JSON,
    METADATA_XML,
    PUBLICATION_STATUSES,
    STORAGE_GLOBAL_JSON,
    SYNC_PROTOCOL,
    StorageGlobal,
    is_storage_id,
)
from swath.platforms.metashare.safezip import write_zip
from swath.platforms.metashare.storage import LRStorage, StoredLR

V = TypeVar("V")
MAX_FORM_BYTES = 64 * 1024
KEEP = 10_000  # login forms, sessions and logged requests kept, newest first: any client may ask for more for ever
IDLE_TIMEOUT = 60.0  # seconds a connection may wait between bytes of a request before the node hangs up
LOGIN_PAGE = (
    '<html><body><form method="post" action="/login/">'
    '<input type="hidden" name="csrfmiddlewaretoken" value="{token}">'
    '<input name="username"><input type="password" name="password">'
    '<input type="hidden" name="this_is_the_login_form" value="1"></form></body></html>'
)
LOGGED_IN_PAGE = "<html><body>Welcome, {user}. <a href=\"/logout/\">Logout</a></body></html>"


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "text/html; charset=utf-8"


@dataclass(frozen=True)
class Logged:
    method: str
    path: str
    status: int


class NodeServer:
    """Serve `storage` to the `users` (name -> password). `public_url` is written as source_url of new LRs.

    Use as a context manager; `url` is where it listens, `log` every request it answered.
    """

    def __init__(
        self,
        *,
        storage: LRStorage,
        users: dict[str, str],
        host: str = "127.0.0.1",
        port: int = 0,
        public_url: str | None = None,
        sync_protocols: tuple[str, ...] = (SYNC_PROTOCOL,),
        tls: ssl.SSLContext | None = None,
        keep: int = KEEP,
        idle_timeout: float = IDLE_TIMEOUT,
    ) -> None:
        self.storage = storage
        self.users = dict(users)
        self.sync_protocols = sync_protocols
        self.keep = keep
        self.idle_timeout = idle_timeout
        self.log: deque[Logged] = deque(maxlen=keep)
        self._csrf_tokens: dict[str, None] = {}  # in the order given: the oldest is let go past `keep`
        self._sessions: dict[str, str] = {}
        self._lock = threading.Lock()
        self._storage_lock = threading.Lock()  # refresh rewrites storage-global.json; one writer at a time
        self.httpd = ThreadingHTTPServer((host, port), _handler_for(self))
        self.httpd.daemon_threads = True
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        scheme = "https" if tls is not None else "http"
        bound_host, bound_port = self.httpd.server_address[:2]
        assert isinstance(bound_host, str)  # typeshed allows bytes; a bound AF_INET socket names its host in str
        self.url = f"{scheme}://{bound_host}:{bound_port}"
        self.public_url = (public_url or self.url).rstrip("/")
        # A short poll keeps shutdown (every test's teardown) quick.
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, name="metashare-node", daemon=True
        )

    def __enter__(self) -> NodeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def serve_forever(self) -> None:
        try:
            self.httpd.serve_forever()
        finally:
            self.httpd.server_close()

    def requests_to(self, prefix: str) -> list[Logged]:
        with self._lock:
            return [entry for entry in self.log if entry.path.startswith(prefix)]

    # --- the protocol's three endpoints ---

    def handle(self, method: str, target: str, cookies: dict[str, str], form: bytes) -> Reply:
        split = urlsplit(target)
        path = split.path
        if path == "/login/" and method == "GET":
            return self._login_form()
        if path == "/login/" and method == "POST":
            return self._login(cookies, form)
        if method != "GET":
            return Reply(405, b"method not allowed")
        if path == "/sync/":
            return self._inventory(cookies, parse_qs(split.query))
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "sync" and parts[2] == "metadata":
            return self._resource(cookies, parts[1])
        return Reply(404, b"not found")

    def _login_form(self) -> Reply:
        token = secrets.token_hex(16)
        with self._lock:
            _keep_newest(self._csrf_tokens, token, None, self.keep)
        headers = {"Set-Cookie": f"csrftoken={token}; Path=/; SameSite=Lax"}
        return Reply(200, LOGIN_PAGE.format(token=token).encode(), headers)

    def _login(self, cookies: dict[str, str], form: bytes) -> Reply:
        fields = {k: v[0] for k, v in parse_qs(form.decode("utf-8", "replace"), keep_blank_values=True).items()}
        token = cookies.get("csrftoken", "")
        with self._lock:
            csrf_ok = bool(token) and token == fields.get("csrfmiddlewaretoken") and token in self._csrf_tokens
        user = fields.get("username", "")
        expected = self.users.get(user)
        password_ok = expected is not None and secrets.compare_digest(expected, fields.get("password", ""))
        if not (csrf_ok and password_ok and fields.get("this_is_the_login_form") == "1"):
            return Reply(403, b"<html><body>Forbidden: login refused.</body></html>")
        session = secrets.token_hex(16)
        with self._lock:
            _keep_newest(self._sessions, session, user, self.keep)
        headers = {"Set-Cookie": f"sessionid={session}; Path=/; HttpOnly; SameSite=Lax"}
        return Reply(200, LOGGED_IN_PAGE.format(user=html.escape(user)).encode(), headers)

    def _authorized(self, cookies: dict[str, str]) -> bool:
        with self._lock:
            return cookies.get("sessionid", "") in self._sessions

    def _inventory(self, cookies: dict[str, str], query: dict[str, list[str]]) -> Reply:
        if not self._authorized(cookies):
            return Reply(403, b"Forbidden: log in as a synchronization user first.")
        versions = query.get("sync_protocol") or []
        if not versions or versions[0] not in self.sync_protocols:
            return Reply(501, f"sync_protocol must be one of {list(self.sync_protocols)}".encode())
        inventory = {lr.identifier: lr.checksum for lr in self._served_lrs()}
        body = write_zip([(INVENTORY_JSON, json.dumps(inventory, sort_keys=True).encode("utf-8"))])
        return Reply(200, body, _attachment("inventory.zip", {"Sync-Protocol": SYNC_PROTOCOL}), "application/zip")

    def _resource(self, cookies: dict[str, str], identifier: str) -> Reply:
        if not self._authorized(cookies):
            return Reply(403, b"Forbidden: log in as a synchronization user first.")
        lr = self._served(identifier) if is_storage_id(identifier) else None
        if lr is None:
            return Reply(404, b"no such LR")
        body = write_zip([(METADATA_XML, lr.metadata_xml), (STORAGE_GLOBAL_JSON, lr.storage_json)])
        return Reply(200, body, _attachment(f"{identifier}.zip"), "application/zip")

    def _served_lrs(self) -> Iterator[StoredLR]:
        for identifier in list(self.storage.ids()):
            lr = self._served(identifier)
            if lr is not None:
                yield lr

    def _served(self, identifier: str) -> StoredLR | None:
        """The LR with storage-global.json brought up to date, or None if absent, internal or broken."""
        with self._storage_lock:
            try:
                lr = self.storage.refresh(identifier, source_url=self.public_url)
                status = StorageGlobal.from_json(lr.storage_json).publication_status if lr else None
            except (MetashareError, ValueError, OSError):
                return None  # a broken LR on disk is not served rather than breaking the inventory
        return lr if status in PUBLICATION_STATUSES else None


def _keep_newest(kept: dict[str, V], key: str, value: V, limit: int) -> None:
    kept[key] = value
    while len(kept) > limit:
        del kept[next(iter(kept))]


def _attachment(filename: str, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"Content-Disposition": f'attachment; filename="{filename}"', **(extra or {})}


def _handler_for(node: NodeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "swath-metashare-node"
        disable_nagle_algorithm = True  # headers and body go out in two writes; Nagle would hold the body ~40 ms
        timeout = node.idle_timeout  # each connection holds a thread: one that stops sending is closed

        def log_message(self, *args: object) -> None:  # requests are kept in node.log instead
            pass

        def _serve(self) -> None:
            raw_length = self.headers.get("Content-Length") or "0"
            length = int(raw_length) if raw_length.isdigit() else -1
            if not 0 <= length <= MAX_FORM_BYTES:
                reply = Reply(413 if length > 0 else 400, b"bad or too large request body")
                self.close_connection = True
            else:
                form = self.rfile.read(length) if length else b""
                reply = node.handle(self.command, self.path, _cookies(self.headers.get_all("Cookie") or []), form)
            with node._lock:
                node.log.append(Logged(self.command, urlsplit(self.path).path, reply.status))
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            self.send_header("Content-Length", str(len(reply.body)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(reply.body)

        do_GET = do_POST = _serve

    return Handler


def _cookies(headers: list[str]) -> dict[str, str]:
    jar: dict[str, str] = {}
    for header in headers:
        try:
            parsed = SimpleCookie(header)
        except CookieError:
            continue
        jar.update({name: morsel.value for name, morsel in parsed.items()})
    return jar
