"""A real SMTP server on 127.0.0.1 for the notification tests (aiosmtpd), keeping what it received."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword


@dataclass
class Inbox:
    """The mails the server accepted (recipients, parsed message) and the logins it saw."""

    login: tuple[str, str] | None = None
    mails: list[tuple[list[str], Message]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def to(self, address: str) -> list[Message]:
        with self.lock:
            return [message for rcpt, message in self.mails if address in rcpt]

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        with self.lock:
            self.mails.append((list(envelope.rcpt_tos), email.message_from_bytes(envelope.original_content,
                                                                                 policy=email.policy.default)))
        return "250 OK"


def free_port(hostname: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((hostname, 0))
        return int(sock.getsockname()[1])


@contextmanager
def smtp_server(*, user: str, password: str, hostname: str = "127.0.0.1") -> Iterator[tuple[Inbox, int]]:
    """An SMTP server offering AUTH over plain SMTP (a test, no TLS) that accepts `user`/`password`; the test
    checks the login it saw."""
    inbox = Inbox()

    def authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
        if isinstance(data, LoginPassword):
            inbox.login = (data.login.decode(), data.password.decode())
            return AuthResult(success=inbox.login == (user, password))
        return AuthResult(success=False)

    port = free_port(hostname)
    controller = Controller(inbox, hostname=hostname, port=port, authenticator=authenticate,
                            auth_require_tls=False)
    controller.start()
    try:
        yield inbox, port
    finally:
        controller.stop()
