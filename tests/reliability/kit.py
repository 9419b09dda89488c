"""Helpers for the reliability suite (no tests here): worker subprocesses that can be kill -9'ed and
restarted, a status collector that survives broker restarts, fake APIs that log every item they serve,
and read-back of what the workers wrote."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pika
import pika.exceptions
from warcio.archiveiterator import ArchiveIterator

from swath.core.config import Config, api_url_env
from swath.messages.broker import STATUS_BINDINGS, declare_topology, declare_work_queue
from swath.messages.topology import connection_parameters
from tests.fakes.httpserver import FakeServer, Request, Response, write_chunk

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent
GENERIC_SECRET = "rel-api-key-5b7e1c9d0a"  # the generic fakes' api_key; must never be written anywhere
FINAL = ("completed success", "completed failure")


def worker_env(config: Config, **extra: str) -> dict[str, str]:
    """The environment `python -m swath worker NAME` reads its Config from (Config.from_env names)."""
    env = {
        "SWATH_AMQP_URL": config.amqp_url,
        "SWATH_EXCHANGE": config.exchange,
        "SWATH_DEAD_LETTER_EXCHANGE": config.dead_letter_exchange,
        "SWATH_DEAD_LETTER_QUEUE": config.dead_letter_queue,
        "SWATH_STATUS_QUEUE": config.status_queue,
        "SWATH_QUEUE_PREFIX": config.queue_prefix,
        "SWATH_DATA_ROOT": str(config.data_root),
        "SWATH_DB_URL": config.db_url,
        "SWATH_STATUS_INTERVAL": str(config.status_interval),
        "SWATH_RECONNECT_MAX_DELAY": str(config.reconnect_max_delay),
        "SWATH_WARC_MAX_BYTES": str(config.warc_max_bytes),
        "SWATH_WARC_MAX_SECONDS": str(config.warc_max_seconds),
        "SWATH_HTTP_RETRIES": str(config.http_retries),
        "SWATH_HTTP_BACKOFF": str(config.http_backoff),
        "SWATH_HTTP_TIMEOUT": str(config.http_timeout),
        "SWATH_MAX_RESPONSE_BYTES": str(config.max_response_bytes),
        "SWATH_DELIVERY_LIMIT": str(config.delivery_limit),
        **{api_url_env(platform): url for platform, url in config.api_urls.items()},
    }
    if config.storage_url:  # WARCs go to a bucket, claims and state to the store at db_url
        env |= {"SWATH_STORAGE_URL": config.storage_url, "SWATH_STORAGE_ENDPOINT": config.storage_endpoint,
                "SWATH_STORAGE_ACCESS_KEY_ID": config.storage_access_key_id,
                "SWATH_STORAGE_SECRET_ACCESS_KEY": config.storage_secret_access_key}
    base = {k: v for k, v in os.environ.items() if not k.startswith("SWATH_")}
    return {**base, **env, "PYTHONPATH": str(ROOT), **extra}


def declare_queues(config: Config, names: Iterable[str]) -> None:
    """Declare the workers' queues first, so nothing published before a worker attaches is unroutable."""
    from swath.services import all_services

    services = all_services()
    conn = pika.BlockingConnection(connection_parameters(config, name="swath-test"))
    try:
        channel = conn.channel()
        declare_topology(channel, config)
        for name in names:
            declare_work_queue(channel, config, config.queue_prefix + name, services[name].bindings)
    finally:
        conn.close()


class WorkerProcess:
    """`python -m swath worker NAME` (or `monitor`) in a subprocess; its stderr goes to one log file
    across restarts."""

    def __init__(self, *, config: Config, name: str, log_dir: Path, log_level: str = "INFO",
                 env: dict[str, str] | None = None) -> None:
        self.config, self.name, self.log_level = config, name, log_level
        self.log_path = log_dir / f"{name}.log"
        self.env = env or worker_env(config)
        self.proc: subprocess.Popen | None = None
        self.kills = 0
        self.pids: list[int] = []
        self._log_offset = 0

    def command(self) -> list[str]:
        args = ["monitor"] if self.name == "monitor" else ["worker", self.name]
        return [sys.executable, "-m", "swath", "--log-level", self.log_level, *args]

    def start(self) -> WorkerProcess:
        self._log_offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.command(), cwd=ROOT, env=self.env, stdout=log, stderr=log)
        self.pids.append(self.proc.pid)
        return self

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)
        self.kills += 1

    def stop(self, timeout: float = 120) -> int | None:
        """SIGTERM and wait; returns the exit code (None if it had to be killed)."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # its threads' stacks into its log, to see what it waited for
            time.sleep(1)
            self.proc.kill()
            self.proc.wait()
            return None

    def ready(self) -> bool:
        """Attached to its queue since the last (re)start (the runtime logs a 'consuming' line per attach)."""
        if not self.alive():
            return False
        with self.log_path.open("rb") as fh:
            fh.seek(self._log_offset)
            return b" consuming " in fh.read()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""


class Collector:
    """A stand-in requester: a durable queue bound to every status and warc_created key, read by a thread
    that reconnects when the broker goes away (auto-ack: what arrived is kept here)."""

    def __init__(self, *, config: Config, queue: str) -> None:
        self.config, self.queue = config, queue
        self.messages: list[tuple[str, dict[str, Any]]] = []
        self.reconnects = 0
        self.idle = 0  # times the reader found the queue quiet (see drained)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        conn = pika.BlockingConnection(connection_parameters(config, name="swath-test"))
        declare_topology(conn.channel(), config)
        declare_work_queue(conn.channel(), config, queue, STATUS_BINDINGS)
        conn.close()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Collector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn = pika.BlockingConnection(connection_parameters(self.config, name="swath-test"))
                try:
                    channel = conn.channel()
                    for method, _props, body in channel.consume(self.queue, auto_ack=True, inactivity_timeout=0.2):
                        if method is None:
                            self.idle += 1
                        else:
                            try:
                                decoded = orjson.loads(body)
                            except orjson.JSONDecodeError:
                                decoded = {"undecodable": body.decode("utf-8", "replace")}
                            with self._lock:
                                self.messages.append((method.routing_key, decoded))
                        if self._stop.is_set():
                            break
                finally:
                    if conn.is_open:
                        conn.close()
            except (pika.exceptions.AMQPError, ConnectionError, OSError):
                self.reconnects += 1
                self._stop.wait(0.5)

    def snapshot(self) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            return list(self.messages)

    def statuses(self, harvest_id: str | None = None) -> list[dict[str, Any]]:
        return [b for k, b in self.snapshot()
                if ".status." in k and "id" in b and (harvest_id is None or b["id"] == harvest_id)]

    def finals(self) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for body in self.statuses():
            if body["status"] in FINAL:
                out.setdefault(body["id"], []).append(body)
        return out

    def warcs(self) -> list[dict[str, Any]]:
        return [b for k, b in self.snapshot() if k == "warc_created"]

    def wait(self, predicate, timeout: float) -> bool:
        """Poll `predicate` until true or `timeout` (a hang guard) passes; callers assert with a message."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return True
            time.sleep(0.1)
        return predicate()

    def drained(self, timeout: float = 120) -> None:
        """Wait until all that is in the queue now has been read: the queue is empty, then the reader has gone
        quiet once (pika hands out what it already fetched before it reports a quiet spell)."""
        conn = pika.BlockingConnection(connection_parameters(self.config, name="swath-test"))
        try:
            channel = conn.channel()

            def depth() -> int:
                return channel.queue_declare(queue=self.queue, passive=True).method.message_count

            assert self.wait(lambda: depth() == 0, timeout), f"{depth()} message(s) still unread in {self.queue}"
        finally:
            conn.close()
        idle = self.idle
        assert self.wait(lambda: self.idle > idle, timeout), f"the reader of {self.queue} never went quiet"


# ---- fake APIs that log every item they serve ------------------------------------------------------


@dataclass
class ServedLog:
    """Item ids each fake sent, by harvest key; streams also by connection."""

    items: dict[str, list[str]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, key: str, ids: list[str]) -> None:
        with self.lock:
            self.items.setdefault(key, []).extend(ids)


class ReliabilityApi:
    """On one FakeServer: `/pages?h=KEY&page=N` (generic_pages: `per_page` items, `pages` pages, a
    relative next link, `delay` s per page) and `/stream?h=KEY` (generic_stream: one line every `every`
    s, ids KEY:CONNECTION:N). Both check the api_key. `hold_after`: pages past it wait for `release()`, so a
    harvest cannot end while a test sets up what should happen to it mid-way, however busy the machine."""

    def __init__(self, server: FakeServer, *, pages: int = 6, per_page: int = 5, delay: float = 0.05,
                 every: float = 0.01, hold_after: int | None = None) -> None:
        self.server, self.pages, self.per_page, self.delay, self.every = server, pages, per_page, delay, every
        self.hold_after, self.released = hold_after, threading.Event()
        self.served = ServedLog()
        self.connections: dict[str, int] = {}
        self._lock = threading.Lock()
        server.route("/pages")(self.page)
        server.route("/stream")(self.stream)

    def page_url(self, key: str) -> str:
        return f"{self.server.url}/pages?h={key}&page=1"

    def stream_url(self, key: str) -> str:
        return f"{self.server.url}/stream?h={key}"

    def start(self, harvest_id: str, *, collection_set: str, collection: str, feed: str | None = None,
              stream: bool = False) -> tuple[str, dict[str, Any]]:
        """(routing key, body) of the harvest.start of a generic_pages harvest (generic_stream when `stream`) of
        `feed` (default: the harvest id) into collections/<collection_set>/<collection>, with the fakes' api_key."""
        kind = "generic_stream" if stream else "generic_pages"
        url = self.stream_url(feed or harvest_id) if stream else self.page_url(feed or harvest_id)
        return f"harvest.start.generic.{kind}", {
            "id": harvest_id, "type": kind, "path": f"collections/{collection_set}/{collection}",
            "seeds": [{"id": "seed-1", "token": url}], "credentials": {"api_key": GENERIC_SECRET},
            "collection_set": {"id": collection_set}, "collection": {"id": collection}}

    def page(self, request: Request) -> Response:
        if request.arg("api_key") != GENERIC_SECRET:
            return Response(401, b'{"error": "bad key"}')
        time.sleep(self.delay)
        key, page = request.arg("h"), int(request.arg("page", "1"))
        if self.hold_after is not None and page > self.hold_after:
            self.released.wait(300)
        ids = [f"{key}-{i}" for i in range((page - 1) * self.per_page, page * self.per_page)]
        self.served.add(key, ids)
        body = {"items": [{"id": i, "text": f"item {i}"} for i in ids],
                "next": f"/pages?h={key}&page={page + 1}" if page < self.pages else None}
        return Response(200, json.dumps(body).encode())

    def release(self) -> None:
        self.released.set()

    def stream(self, request: Request) -> Response:
        if request.arg("api_key") != GENERIC_SECRET:
            return Response(401, b'{"error": "bad key"}')
        key = request.arg("h")
        with self._lock:
            conn = self.connections[key] = self.connections.get(key, 0) + 1

        def body(wfile) -> None:
            n = 0
            while True:
                item = f"{key}:{conn}:{n}"
                write_chunk(wfile, json.dumps({"id": item, "text": "x" * 40}).encode() + b"\r\n")
                self.served.add(key, [item])  # logged once the write succeeded
                n += 1
                time.sleep(self.every)

        return Response(200, body, content_type="application/x-ndjson")


# ---- reading back what the workers wrote -----------------------------------------------------------


def warc_responses(paths: Iterable[Path]) -> list[tuple[str, bytes]]:
    """(target URI, payload) of every 200 response record."""
    out = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response" and rec.http_headers and rec.http_headers.get_statuscode() == "200":
                    out.append((rec.rec_headers.get_header("WARC-Target-URI"), rec.content_stream().read()))
    return out


def items_in_warcs(paths: Iterable[Path]) -> dict[str, list[str]]:
    """Item ids found in the WARCs by URI kind: 'pages', 'stream', 'tumblr'."""
    found: dict[str, list[str]] = {"pages": [], "stream": [], "tumblr": []}
    for uri, payload in warc_responses(paths):
        if "/pages?" in uri:
            found["pages"].extend(item["id"] for item in json.loads(payload)["items"])
        elif "/stream?" in uri:
            found["stream"].extend(json.loads(line)["id"] for line in payload.splitlines() if line.strip())
        elif "/v2/blog/" in uri:
            found["tumblr"].extend(p["id_string"] for p in json.loads(payload)["response"]["posts"])
    return found


def warcio_check(paths: list[Path]) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "warcio"), "check", *map(str, paths)], capture_output=True, text=True)


def everything_written(root: Path) -> Iterable[tuple[Path, bytes]]:
    """Every file under `root`, gzip members also decompressed, for scanning for secrets."""
    for path in sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
        data = path.read_bytes()
        yield path, data
        if path.name.endswith(".gz"):
            try:
                yield path, gzip.decompress(data)
            except (OSError, EOFError):
                pass  # a .open leftover may end mid-member; its raw bytes were scanned above


def leaks(secrets: Iterable[str], blobs: Iterable[tuple[Any, bytes]]) -> list[tuple[str, str]]:
    """(where, secret) for every secret found in the blobs."""
    found = []
    secrets = [s for s in secrets if s]
    for where, data in blobs:
        for secret in secrets:
            if secret.encode() in data:
                found.append((str(where), secret))
    return found
