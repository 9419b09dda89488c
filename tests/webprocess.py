"""`swath web` in a real uvicorn subprocess for tests that measure it from outside (no tests here): its memory
(/proc/<pid>/status), concurrent requests over real sockets, bodies sent raw."""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx

from swath.core.config import Config
from swath.messages.worker import wait_for
from swath.web.routes_auth import LOGIN_CSRF
from tests.requesterkit import cli_env
from tests.webkit import csrf_of

ROOT = Path(__file__).resolve().parents[1]
MIB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class WebProcess:
    def __init__(self, proc: subprocess.Popen[bytes], port: int) -> None:
        self.proc, self.port = proc, port
        self.url = f"http://127.0.0.1:{port}"

    def memory(self, field: str = "VmHWM") -> int:
        """Bytes of the process's resident memory: VmHWM its peak so far, VmRSS now."""
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        found = re.search(rf"^{field}:\s+(\d+) kB", status, re.M)
        assert found, f"no {field} in /proc/{self.proc.pid}/status"
        return int(found.group(1)) * 1024

    def baseline(self) -> int:
        """The resident memory now, with the peak reset to it (the import-time hash's 64 MiB peak forgotten)."""
        Path(f"/proc/{self.proc.pid}/clear_refs").write_text("5")
        return self.memory("VmRSS")

    def login_token(self) -> str:
        """A login form's CSRF token (its cookie holds the same value)."""
        response = httpx.get(f"{self.url}/login", timeout=60)
        assert response.cookies.get(LOGIN_CSRF) == csrf_of(response.text)
        return csrf_of(response.text)

    def login(self, name: str, password: str, token: str) -> httpx.Response:
        return httpx.post(f"{self.url}/login", data={"csrf": token, "name": name, "password": password},
                          cookies={LOGIN_CSRF: token}, timeout=120)


@contextlib.contextmanager
def web_process(config: Config, **env: str) -> Iterator[WebProcess]:
    """`swath web` on a free port with this test's data root and store, `env` added (SWATH_WEB_* limits)."""
    port = free_port()
    log = open(config.data_root / "web.log", "wb")  # noqa: SIM115 - closed below, after the process
    proc = subprocess.Popen([sys.executable, "-m", "swath", "web", "--port", str(port)], cwd=ROOT,
                            env={**os.environ, **cli_env(config), **env}, stdout=log, stderr=log)
    web = WebProcess(proc, port)
    try:
        assert wait_for(lambda: _answers(web) or proc.poll() is not None, 120), "swath web did not start"
        assert proc.poll() is None, (config.data_root / "web.log").read_text()
        yield web
    finally:
        proc.terminate()
        proc.wait(60)
        log.close()


def _answers(web: WebProcess) -> bool:
    try:
        return httpx.get(f"{web.url}/healthz", timeout=5).status_code == 200
    except httpx.TransportError:
        return False


def send_raw(web: WebProcess, path: str, body: Iterator[bytes], *, length: int | None = None,
             cookie: str = "") -> int:
    """POST a body (with Content-Length `length`, else chunked) over a raw socket and return the answer's
    status. The body goes out from a thread that stops as soon as an answer came, so a server that answers
    unread is not made to receive it; one that reads it all gets every byte."""
    sock = socket.create_connection(("127.0.0.1", web.port), timeout=300)
    framing = f"Content-Length: {length}" if length is not None else "Transfer-Encoding: chunked"
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            f"{framing}\r\n" + (f"Cookie: {cookie}\r\n" if cookie else "") + "\r\n")
    answered = threading.Event()

    def send() -> None:
        with contextlib.suppress(OSError):  # the server closed the connection after its answer
            sock.sendall(head.encode())
            for chunk in body:
                if answered.is_set():
                    return
                sock.sendall(chunk if length is not None else b"%x\r\n%s\r\n" % (len(chunk), chunk))
            if length is None:
                sock.sendall(b"0\r\n\r\n")

    sender = threading.Thread(target=send, daemon=True, name="test-send-raw")
    sender.start()
    received = b""
    with sock:
        while b"\r\n" not in received:
            data = sock.recv(65536)
            assert data, f"the server closed the connection without an answer to POST {path}"
            received += data
        answered.set()
    sender.join(300)
    return int(received.split(b" ", 2)[1])


def form_fields(count: int, size: int) -> Iterator[bytes]:
    """A urlencoded form of `count` fields of `size` bytes each, one field per chunk."""
    for n in range(count):
        yield (b"&" if n else b"") + b"f%d=" % n + b"x" * size
