"""What went wrong with the broker, in one line that says what to do.

pika reports a refused login, a missing vhost, a missing permission and a dead host as a handful of exception
types whose text holds the broker's reply; `classify()` turns any of them into a `BrokerError` with a stable
code (messages/codes.py), so the CLI prints one line and a worker logs one line per wait, never a traceback.
"""

from __future__ import annotations

import logging
import re
import socket
from urllib.parse import quote

import pika
import pika.exceptions

from swath.core.errors import SwathError
from swath.messages import codes
from swath.messages.nodes import amqp_urls

log = logging.getLogger(__name__)

# Refusals that retrying cannot cure until an operator changes the broker or SWATH_AMQP_URL.
FATAL_CODES = frozenset({codes.BROKER_AUTH_REFUSED, codes.BROKER_VHOST_MISSING, codes.BROKER_PERMISSION})
_SETUP_HINT = "docs/security.md, 'Recommended RabbitMQ set-up'"


class BrokerError(SwathError):
    """The broker could not be used; `code` says why (one of the broker_* codes), `message` what to do."""

    code = codes.BROKER_UNREACHABLE

    @property
    def fatal(self) -> bool:
        return self.code in FATAL_CODES


def safe_url(url: str) -> str:
    """The AMQP URL (each node's, when SWATH_AMQP_URL names several) without its password, for messages and logs."""
    return ", ".join(_safe_node_url(node) for node in amqp_urls(url))


def _safe_node_url(url: str) -> str:
    params = pika.URLParameters(url)
    scheme = "amqps" if params.ssl_options else "amqp"
    return f"{scheme}://{params.host}:{params.port}/{quote(params.virtual_host, safe='')}"


def _texts(exc: BaseException) -> str:
    """Every text pika nests in an error (workflow failures wrap the broker's reply several levels deep)."""
    seen: list[str] = []
    stack: list[object] = [exc]
    while stack and len(seen) < 50:
        item = stack.pop()
        seen.append(repr(item))
        if isinstance(item, BaseException):
            stack.extend(item.args)
            for attr in ("exceptions", "__cause__", "__context__"):
                value = getattr(item, attr, None)
                if isinstance(value, list | tuple):
                    stack.extend(value)
                elif isinstance(value, BaseException):
                    stack.append(value)
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return " ".join(seen)


def classify(exc: BaseException, url: str) -> BrokerError:
    """A `BrokerError` for any connection or channel failure (the original stays under --debug)."""
    if isinstance(exc, BrokerError):
        return exc
    log.debug("broker error at %s", safe_url(url), exc_info=exc)
    params = pika.URLParameters(amqp_urls(url)[0])  # every node of a cluster has the same users and vhosts
    where, user, vhost = safe_url(url), params.credentials.username, params.virtual_host
    text = _texts(exc)
    if isinstance(exc, pika.exceptions.ProbableAuthenticationError | pika.exceptions.AuthenticationError) \
            or "Login was refused" in text:
        return BrokerError(f"the broker at {where} refused the login of user {user!r}: check the user and password "
                           "in SWATH_AMQP_URL", code=codes.BROKER_AUTH_REFUSED)
    missing = re.search(r"vhost (.+?) not found", text)
    if missing:
        return BrokerError(f"the broker at {where} has no virtual host {vhost!r}: create it (rabbitmqctl add_vhost "
                           f"{vhost}) or fix the vhost at the end of SWATH_AMQP_URL", code=codes.BROKER_VHOST_MISSING)
    if isinstance(exc, pika.exceptions.ProbableAccessDeniedError) or re.search(r"access to vhost .* refused", text):
        return BrokerError(f"user {user!r} may not use virtual host {vhost!r} at {where}: grant it "
                           f"(rabbitmqctl set_permissions -p {vhost} {user} ...; {_SETUP_HINT}) or use another user "
                           "in SWATH_AMQP_URL", code=codes.BROKER_PERMISSION)
    mismatch = re.search(r"inequivalent arg '([^']+)' for queue '([^']+)'", text)
    if mismatch:
        return BrokerError(f"queue {mismatch.group(2)!r} exists at {where} with another {mismatch.group(1)} than swath "
                           "declares (a classic queue from an older swath, or another SWATH_DELIVERY_LIMIT): run "
                           "`swath broker setup` to see which, `swath broker setup --migrate` to move their messages "
                           "into quorum queues (docs/deployment.md)", code=codes.BROKER_QUEUE_MISMATCH)
    refused = re.search(r"ACCESS_REFUSED - ([^'\"]+)", text)
    if refused:
        return BrokerError(f"the broker refused user {user!r}: {refused.group(1).strip()}; grant that permission "
                           f"({_SETUP_HINT}) or use another user in SWATH_AMQP_URL", code=codes.BROKER_PERMISSION)
    if isinstance(exc, pika.exceptions.ChannelClosedByBroker):  # e.g. 404 NOT_FOUND: the caller said what it wanted
        return BrokerError(f"the broker at {where} refused: {exc.reply_code} {exc.reply_text}",
                           code=codes.UNKNOWN_ERROR)
    return BrokerError(f"cannot reach the broker at {where} ({_reason(exc, text)}): is RabbitMQ running there? "
                       "check the host and port in SWATH_AMQP_URL", code=codes.BROKER_UNREACHABLE)


def _reason(exc: BaseException, text: str) -> str:
    """A few words on why nothing answered."""
    if isinstance(exc, socket.gaierror) or "gaierror" in text:
        return "the host name does not resolve"
    if "ConnectionRefusedError" in text or "Connection refused" in text:
        return "connection refused"
    if isinstance(exc, pika.exceptions.IncompatibleProtocolError) or "IncompatibleProtocolError" in text:
        return "something answers there, but not AMQP"
    if "timed out" in text or "TimeoutError" in text:
        return "timed out"
    if "CONNECTION_FORCED" in text:
        return "the broker closed the connection (shutting down?)"
    return type(exc).__name__


def quiet_pika_logs(*, debug: bool) -> None:
    """pika logs each failed connection attempt at ERROR, several lines deep; swath says it in one line instead."""
    logging.getLogger("pika").setLevel(logging.DEBUG if debug else logging.CRITICAL)
