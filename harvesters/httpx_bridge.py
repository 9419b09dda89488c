"""An httpx transport over swath's recording path, for client libraries that speak httpx (atproto).

`RecordedTransport` hands each httpx request to a requests Session carrying the harvest's recording
adapter (harvesters/http.py), so the library's exchanges get what every harvest request gets: the WARC
request/response pair (secrets redacted), the retry policy and rate-limit waits, the size limit and
deadline, the origin guard, redirects and cookies under the transport policy, HarvestStopped on stop.
Engine errors (Unauthorized, RateLimited, ...) propagate through the library unchanged.

Requests for a login path (`auth_paths`, e.g. `com.atproto.server.createSession`) go instead through the
harvest's unrecorded session (same policy, nothing in the WARC: their bodies are credentials), retried after
connection errors and 5xx by the shared retry policy (`login_retry`, harvesters/retry.py), and every
string under a `secret_fields` key of their JSON answer joins the harvest's secrets before the library
sees it, so a session token never reaches a WARC, a log line, a status or the state.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable
from typing import Any

import httpx
import orjson
import requests

from swath.harvesters.errors import HarvestStopped, RemoteError
from swath.harvesters.http import TRANSIENT
from swath.harvesters.retry import Attempt, GiveUp, RetryPolicy, Wait
from swath.messages import codes

# headers the requests side sets itself (framing, the codings the WARC readers undo: core/encodings.py)
_DROPPED_REQUEST = frozenset({"host", "content-length", "connection", "accept-encoding", "transfer-encoding"})
# the body handed back is decoded and whole: these headers no longer describe it
_DROPPED_RESPONSE = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class RecordedTransport(httpx.BaseTransport):
    """httpx's transport interface over a recording requests Session (see the module docstring)."""

    def __init__(self, *, recorded: requests.Session, unrecorded: Callable[[], requests.Session],
                 add_secret: Callable[[str], None], timeout: float, auth_paths: Iterable[str] = (),
                 secret_fields: Iterable[str] = (), login_retry: RetryPolicy | None = None,
                 sleep: Callable[[float], bool] = lambda seconds: True) -> None:
        self.recorded = recorded
        self.unrecorded = unrecorded  # a new session per login exchange; closed after it
        self.login_retry = login_retry or RetryPolicy(retries=0)  # none given: a login is tried once
        self.sleep = sleep  # the harvest's wait: False when a stop or shutdown ended it
        self.add_secret = add_secret
        self.timeout = timeout
        self.auth_paths = tuple(auth_paths)
        self.secret_fields = frozenset(secret_fields)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        headers = [(name, value) for name, value in request.headers.multi_items()
                   if name.lower() not in _DROPPED_REQUEST]
        body = request.read() or None
        url = str(request.url)
        if request.url.path.endswith(self.auth_paths) and self.auth_paths:
            answer = self._login(request.method, url, headers, body)
            self._learn_secrets(answer)
        else:
            answer = self._send(self.recorded, request.method, url, headers, body)
        kept = [(name, value) for name, value in answer.headers.items() if name.lower() not in _DROPPED_RESPONSE]
        return httpx.Response(answer.status_code, headers=kept, content=answer.content, request=request)

    def _send(self, session: requests.Session, method: str, url: str, headers: list[tuple[str, str]],
              body: bytes | None) -> requests.Response:
        try:
            return session.request(method, url, headers=dict(headers), data=body, timeout=self.timeout)
        except requests.RequestException as exc:  # the recording adapter's own errors are HarvestErrors
            raise RemoteError(f"{type(exc).__name__} from {url.split('?')[0]}") from None

    def _login(self, method: str, url: str, headers: list[tuple[str, str]],
               body: bytes | None) -> requests.Response:
        """One login exchange, unrecorded, tried again as `login_retry` says; its answer when the policy hands it
        on or gives up for a reason the library reports itself (401/403, 429), RemoteError when retries ran out."""
        attempt, where = Attempt(), url.split("?")[0]
        while True:
            answer, failure = None, None
            try:
                with self.unrecorded() as session:
                    answer = session.request(method, url, headers=dict(headers), data=body, timeout=self.timeout)
            except TRANSIENT as exc:
                failure = exc
            except requests.RequestException as exc:  # not the connection (a bad URL...): asking again cannot help
                raise RemoteError(f"{type(exc).__name__} from {where}") from None
            status = None if answer is None else answer.status_code
            decision = self.login_retry.decide(status=status, headers={} if answer is None else answer.headers,
                                               attempt=attempt, now=time.time(), jitter=random.random())
            if isinstance(decision, Wait):
                if not self.sleep(decision.seconds):
                    raise HarvestStopped(f"harvest stopping; {where} not tried again")
                attempt = decision.attempt
                continue
            if isinstance(decision, GiveUp) and decision.code == codes.REMOTE_ERROR:
                why = type(failure).__name__ if answer is None else f"HTTP {status}"
                raise RemoteError(f"{why} from {where}; given up after {decision.attempt.failures} retries "
                                  f"({decision.reason.replace('_', ' ')})", status=status)
            if answer is None:  # the policy hands no connection error on today; if it did, this is what it means
                raise RemoteError(f"{type(failure).__name__} from {where}")
            return answer

    def _learn_secrets(self, answer: requests.Response) -> None:
        """Every token a login answer carries is a credential of the harvest from now on."""
        try:
            value: Any = orjson.loads(answer.content) if answer.content else None
        except orjson.JSONDecodeError:
            return
        if isinstance(value, dict):
            for name in self.secret_fields:
                if isinstance(value.get(name), str) and value[name]:
                    self.add_secret(value[name])

    def close(self) -> None:
        self.recorded.close()
