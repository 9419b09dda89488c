"""An httpx transport over swath's recording path, for client libraries that speak httpx (atproto).

`RecordedTransport` hands each httpx request to a requests Session carrying the harvest's recording
adapter (harvesters/http.py), so the library's exchanges get what every harvest request gets: the WARC
request/response pair (secrets redacted), the retry policy and rate-limit waits, the size limit and
deadline, the origin guard, redirects and cookies under the transport policy, HarvestStopped on stop.
Engine errors (Unauthorized, RateLimited, ...) propagate through the library unchanged.

Requests for a login path (`auth_paths`, e.g. `com.atproto.server.createSession`) go instead through the
harvest's unrecorded session (same policy, nothing in the WARC: their bodies are credentials), and every
string under a `secret_fields` key of their JSON answer joins the harvest's secrets before the library
sees it, so a session token never reaches a WARC, a log line, a status or the state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import httpx
import orjson
import requests

from swath.harvesters.errors import RemoteError

# headers the requests side sets itself (framing, the codings the WARC readers undo: core/encodings.py)
_DROPPED_REQUEST = frozenset({"host", "content-length", "connection", "accept-encoding", "transfer-encoding"})
# the body handed back is decoded and whole: these headers no longer describe it
_DROPPED_RESPONSE = frozenset({"content-encoding", "content-length", "transfer-encoding"})


class RecordedTransport(httpx.BaseTransport):
    """httpx's transport interface over a recording requests Session (see the module docstring)."""

    def __init__(self, *, recorded: requests.Session, unrecorded: Callable[[], requests.Session],
                 add_secret: Callable[[str], None], timeout: float, auth_paths: Iterable[str] = (),
                 secret_fields: Iterable[str] = ()) -> None:
        self.recorded = recorded
        self.unrecorded = unrecorded  # a new session per login exchange; closed after it
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
            with self.unrecorded() as session:
                answer = self._send(session, request.method, url, headers, body)
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
