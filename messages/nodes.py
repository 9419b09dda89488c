"""Which RabbitMQ nodes to connect to, and how: SWATH_AMQP_URL holds one URL or several, comma-separated.

Every node of a cluster serves every queue (quorum queues are replicated, the leader is reached through any
node), so a client may use any of them: it tries them in the order given, and after losing one it starts
with the next, so a node that went away is tried last. A single URL behaves exactly as before.
"""

from __future__ import annotations

import re

import pika
import pika.exceptions

from swath.core.errors import SwathError
from swath.messages import codes

SEPARATOR = ","
SCHEMES = ("amqp://", "amqps://")


class BrokerUrlInvalid(SwathError):
    """SWATH_AMQP_URL is not an AMQP URL: said before any connection is tried (pika would raise IndexError)."""

    code = codes.BROKER_URL_INVALID


def amqp_urls(raw: str) -> list[str]:
    """The node URLs in `raw` (SWATH_AMQP_URL): split on commas, blanks around them dropped."""
    urls = [part.strip() for part in raw.split(SEPARATOR)]
    return [url for url in urls if url] or [raw.strip()]


def without_password(url: str) -> str:
    """`url` with its user information masked, for a message about a URL that may not even parse."""
    return re.sub(r"(?<=//)[^/@]*@", "***@", url)


def checked_amqp_urls(raw: str) -> list[str]:
    """The node URLs in `raw`, each an amqp:// or amqps:// URL pika can read (else BrokerUrlInvalid)."""
    urls = amqp_urls(raw)
    for url in urls:
        problem = None if url.lower().startswith(SCHEMES) else "does not start with amqp:// or amqps://"
        try:
            pika.URLParameters(url)
        except Exception as exc:  # pika raises IndexError, ValueError or KeyError for what it cannot read
            problem = problem or f"does not parse ({type(exc).__name__}: {exc})"
        if problem:
            raise BrokerUrlInvalid(f"SWATH_AMQP_URL {without_password(url)!r} {problem}: give "
                                   "amqp://USER:PASSWORD@HOST:5672/VHOST (amqps:// for TLS; several nodes "
                                   "comma-separated)")
    return urls


def node_parameters(url: str, *, name: str, heartbeat: int) -> pika.URLParameters:
    params = pika.URLParameters(url)
    params.heartbeat = heartbeat
    params.blocked_connection_timeout = 300
    params.client_properties = {"connection_name": name, "product": "swath"}
    return params


class Nodes:
    """The node list of one client, in the order to try them; `failed()` moves the one in use to the back."""

    def __init__(self, raw: str, *, name: str, heartbeat: int) -> None:
        self.urls = checked_amqp_urls(raw)
        self.name, self.heartbeat = name, heartbeat
        self._first = 0

    def parameters(self) -> list[pika.URLParameters]:
        """Every node, starting with the one to try first (what BlockingConnection takes)."""
        order = self.urls[self._first:] + self.urls[:self._first]
        return [node_parameters(url, name=self.name, heartbeat=self.heartbeat) for url in order]

    def current(self) -> pika.URLParameters:
        """The node to try next (SelectConnection takes one)."""
        return self.parameters()[0]

    def current_url(self) -> str:
        return self.urls[self._first]

    def failed(self) -> None:
        """The node tried first went away or refused: start with the next one from now on."""
        self._first = (self._first + 1) % len(self.urls)

    def connected_to(self, connection: pika.BlockingConnection) -> None:
        """A BlockingConnection took one of the list: remember it, so the next loss moves on from there."""
        params = getattr(getattr(connection, "_impl", None), "params", None)
        host, port = getattr(params, "host", None), getattr(params, "port", None)
        for index, url in enumerate(self.urls):
            candidate = pika.URLParameters(url)
            if (candidate.host, candidate.port) == (host, port):
                self._first = index
                return
