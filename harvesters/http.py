"""Recording HTTP: a requests transport adapter that writes every exchange to the harvest's WARCs.

Mount it on any requests.Session (the harvest's own, twarc's, flickrapi's). It:
- records a request + response record pair per exchange, the request with secrets redacted,
  the response byte-exact as received (Content-Encoding kept; chunked framing removed);
- asks the retry policy (harvesters/retry.py) what to do after each answer: it retries connection errors
  and 5xx (not 501/505) with exponential backoff, waits out 429 using the platform's reset headers and
  503 using Retry-After, and gives up with Unauthorized on 401/403; the adapter does the waiting and
  raises the policy's error (each carries the HTTP status that ended it), and ResponseTooLarge past the limit;
- redacts the values of Set-Cookie headers in the recorded response (session cookies are credentials)
  and adds them to the harvest's secrets; the WARC records themselves are redacted as they are built
  (harvesters/warc_records.py `RecordFactory`, docs/harvesting.md "Redaction");
- for `stream=True` 2xx responses, hands the client a tap that records what it reads in
  segments of complete lines (harvesters/streams.py, docs/harvesting.md).

Its base, `GuardedAdapter`, is the transport policy without recording or retries (the engine's
unrecorded session: logins, token exchanges, dry runs): each request is checked by the origin guard
(harvesters/guard.py) before it is sent, each exchange ends by `Limits.deadline` (harvesters/deadline.py,
DeadlineExceeded) and each body is read up to `Limits.max_response_bytes`.
"""

from __future__ import annotations

import functools
import io
import random
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests
import urllib3

from swath.harvesters import deadline
from swath.harvesters.errors import (
    DeadlineExceeded,
    HarvestStopped,
    RateLimited,
    RemoteError,
    ResponseTooLarge,
    Unauthorized,
)
from swath.harvesters.guard import OriginGuard, bare_url, header_text
from swath.harvesters.redaction import MIN_ANYWHERE, Redactor, redact_set_cookie, set_cookie_value
from swath.harvesters.retry import MAX_RATE_LIMITS, MAX_RATE_WAIT, Attempt, GiveUp, RetryPolicy, Wait
from swath.harvesters.retry import rate_limit_wait as rate_limit_wait  # re-exported: its callers import it here
from swath.harvesters.session_env import CaPathOnce
from swath.harvesters.streams import LineStreamResponse, StreamRecording
from swath.harvesters.warc import warc_date
from swath.messages import codes

_URL_AGAIN = re.compile(r" with url: \S+")  # urllib3 names the URL again, query and all: the message says it once

# hop-by-hop framing that no longer describes the recorded body; kept under the pywb-style prefix
ORIG_PREFIX = "X-Archive-Orig-"
# a connection that failed: the retry policy's `status=None`
TRANSIENT = (requests.ConnectionError, requests.Timeout, requests.exceptions.ChunkedEncodingError,
             urllib3.exceptions.ProtocolError, urllib3.exceptions.ReadTimeoutError)


class Gate(Protocol):
    """What the unrecorded adapter needs from the harvest that owns it (harvesters/recorder.py)."""

    def requests_refused(self) -> bool: ...  # True once no new request may start (stop/shutdown)
    def debug(self, text: str | Callable[[], str]) -> None: ...  # a function: called only when debugging
    def add_secret(self, value: str) -> None: ...  # redacted from now on, everywhere in the harvest


class Sink(Gate, Protocol):
    """What the recording adapter needs from the harvest that owns it (harvesters/recorder.py)."""

    def write_records(self, records: list | Callable[[], list], *, size: int = 0) -> None: ...
    def rate_limited(self, wait: float, url: str) -> None: ...
    def sleep(self, seconds: float) -> bool: ...  # False if interrupted by stop/shutdown
    def add_stream(self, stream: StreamRecording) -> None: ...
    def remove_stream(self, stream: StreamRecording) -> None: ...


@dataclass(frozen=True)
class Limits:
    retries: int = 5
    backoff: float = 0.5  # first retry delay in seconds; doubles per attempt, capped at 60
    timeout: float = 60.0
    max_response_bytes: int = 100 * 1024 * 1024
    max_line_bytes: int = 32 * 1024 * 1024  # a stream line longer than this ends the stream
    deadline: float = 300.0  # seconds one exchange (connect, headers, body; not a stream's body) may take


def read_limited(chunks: Iterable[bytes], *, limit: int, too_large: Callable[[], Exception]) -> bytes:
    """The chunks joined; raises too_large() as soon as they pass `limit` bytes, so the rest is never read
    (the adapter's body reads and the backends' unrecorded dry-run reads share it)."""
    parts, size = [], 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise too_large()
        parts.append(chunk)
    return b"".join(parts)


def _http_version(raw: Any) -> str:
    return {10: "HTTP/1.0", 11: "HTTP/1.1", 20: "HTTP/2"}.get(getattr(raw, "version", 11), "HTTP/1.1")


def _recorded_response_headers(items: Iterable[tuple[str, str]], *, decoded: bool) -> list[tuple[str, str]]:
    """The response's headers as received, renaming those that no longer describe the stored body
    and redacting the values of Set-Cookie (the only change: the body stays byte-exact)."""
    renamed = {"transfer-encoding"} | ({"content-encoding", "content-length"} if decoded else set())
    out = []
    for name, value in items:
        lower = name.lower()
        if lower == "set-cookie":
            value = redact_set_cookie(value)
        out.append(((ORIG_PREFIX + name) if lower in renamed else name, value))
    return out


class GuardedAdapter(CaPathOnce):
    """The transport policy without recording or retries: origin guard, deadline, size limit, stop.
    Bodies are always read whole here (within the limit and the deadline), `stream=True` or not."""

    def __init__(self, *, gate: Gate, guard: OriginGuard, limits: Limits, **kwargs: Any) -> None:
        self.gate = gate
        self.guard = guard
        self.limits = limits
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        deadline.watch_pools(self.poolmanager)  # so a deadline can shut down the connection in use

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        if self.gate.requests_refused():
            raise HarvestStopped(f"harvest stopping; not requesting {self.guard.redactor.url(request.url or '')}")
        response, body = self._exchange(request, stream=False, timeout=timeout, verify=verify, cert=cert,
                                        proxies=proxies)
        assert body is not None  # only a stream is handed on unread
        self.gate.debug(f"{request.method} {self.guard.redactor.url(request.url or '')} -> {response.status_code} "
                        f"({len(body)} bytes, not recorded)")
        return self._with_body(request, response, body)

    def _exchange(self, request: requests.PreparedRequest, *, stream: bool, timeout: Any, verify: Any,
                  cert: Any, proxies: Any) -> tuple[requests.Response, bytes | None]:
        """Check, send and read one exchange within the deadline; the body is None for a 2xx when
        `stream` (handed on unread: a stream has no deadline, its lines are limited instead)."""
        self.guard.check(request)
        watch = deadline.watch(self.limits.deadline)
        raw = None
        try:
            with watch.attaching():
                response = super().send(request, stream=True, timeout=timeout or self.limits.timeout,
                                        verify=verify, cert=cert, proxies=proxies)
            raw = response.raw
            watch.attach_response(raw)
            self._learn_cookies(raw)  # every answer, recorded or not, streamed or not
            body = None if stream and 200 <= raw.status < 300 else self._read_body(raw)
        except BaseException:
            if watch.done():
                raise self._deadline_error(request, raw) from None
            raise
        if watch.done():
            raw.close()
            raise self._deadline_error(request, raw)
        if body is not None:
            raw.release_conn()
        return response, body

    def _learn_cookies(self, raw: Any) -> None:
        """A cookie the server sets is a credential of the harvest from now on: redacted wherever its value
        shows up again (an echo in a body, an error, a log line). Values under 4 characters are left: they
        cannot be session secrets, and redacting them as tokens would garble statuses (`consent=1`)."""
        for value in (set_cookie_value(v) for v in raw.headers.getlist("Set-Cookie")):
            if len(value) >= MIN_ANYWHERE:
                self.gate.add_secret(value)

    def _deadline_error(self, request: requests.PreparedRequest, raw: Any) -> DeadlineExceeded:
        url = self.guard.redactor.url(request.url or "")
        return DeadlineExceeded(f"{url} took longer than {self.limits.deadline:g}s (SWATH_HTTP_DEADLINE); "
                                f"the connection was closed", status=getattr(raw, "status", None))

    def _read_body(self, raw: Any) -> bytes:
        """The body as sent (not decoded), at most `max_response_bytes`; the caller releases the connection."""
        limit = self.limits.max_response_bytes
        declared = raw.headers.get("Content-Length")
        if declared and declared.isdigit() and "chunked" not in raw.headers.get("Transfer-Encoding", ""):
            if int(declared) > limit:
                raw.close()
                raise ResponseTooLarge(f"response declares {declared} bytes, over the limit of {limit}",
                                       status=raw.status)
            return raw.read(decode_content=False)  # the declared length, within the limit: one read

        def too_large() -> ResponseTooLarge:
            return ResponseTooLarge(f"response exceeded the limit of {limit} bytes", status=raw.status)

        try:
            return read_limited(raw.stream(65536, decode_content=False), limit=limit, too_large=too_large)
        except ResponseTooLarge:
            raw.close()
            raise

    def _with_body(self, request: requests.PreparedRequest, response: requests.Response,
                   body: bytes) -> requests.Response:
        """The Response requests built keeps its status, headers and cookies; only the body is handed on:
        as its content when stored as sent (no copy), else decoded by urllib3 up to the size limit (a gzip
        bomb within the limit as sent must not inflate whole, as requests' own `.content` would)."""
        raw = response.raw
        if raw.headers.get("Content-Encoding", "identity").strip().lower() in ("", "identity"):
            response._content, response._content_consumed = body, True
            return response
        limit = self.limits.max_response_bytes
        try:
            decoded = self._replay(request, raw, body).read(limit + 1, decode_content=True)
        except urllib3.exceptions.DecodeError as exc:  # what requests raises for it, as before
            raise requests.exceptions.ContentDecodingError(exc, request=request) from None
        if len(decoded) > limit:
            raise ResponseTooLarge(f"response decodes to more than the limit of {limit} bytes "
                                   f"({len(body)} bytes as sent)", status=raw.status)
        response._content, response._content_consumed = decoded, True
        return response

    @staticmethod
    def _replay(request: requests.PreparedRequest, raw: Any, body: bytes) -> urllib3.HTTPResponse:
        """A fresh urllib3 response over the bytes already read, so requests decodes it as usual."""
        replay = urllib3.HTTPResponse(
            body=io.BytesIO(body), headers=raw.headers, status=raw.status, version=raw.version,
            reason=raw.reason, preload_content=False, decode_content=True,
            original_response=getattr(raw, "_original_response", None),
            request_method=request.method, request_url=request.url, enforce_content_length=False,
        )
        return replay


class RecordingAdapter(GuardedAdapter):
    """A GuardedAdapter that also records and retries; see the module docstring."""

    def __init__(self, *, sink: Sink, redactor: Redactor, limits: Limits, factory: Any, guard: OriginGuard,
                 **kwargs: Any) -> None:
        super().__init__(gate=sink, guard=guard, limits=limits, **kwargs)
        self.sink = sink
        self.redactor = redactor
        self.factory = factory  # harvesters.warc_records.RecordFactory
        self.policy = RetryPolicy(retries=limits.retries, backoff=limits.backoff, max_wait=MAX_RATE_WAIT,
                                  max_rate_limits=MAX_RATE_LIMITS)

    # --- recording ---
    def _request_parts(self, method: str, url: str, header_items: list[tuple[Any, Any]],
                       body: Any) -> tuple[str, str, list[tuple[str, str]], bytes]:
        """The recorded request: URI, request line, headers and body, with the secrets redacted."""
        uri = self.redactor.url(url)
        split = urlsplit(uri)
        target = (split.path or "/") + (f"?{split.query}" if split.query else "")
        # some auth libraries (requests_oauthlib) set header names or values as bytes
        headers = [(header_text(name), header_text(value)) for name, value in header_items]
        content_type = next((value for name, value in headers if name.lower() == "content-type"), "")
        if not any(name.lower() == "host" for name, _ in headers):
            headers.insert(0, ("Host", urlsplit(url).netloc.rpartition("@")[2]))
        if isinstance(body, str):
            body = body.encode("utf-8")
        elif body is not None and not isinstance(body, bytes):
            headers.append(("X-Swath-Body-Not-Recorded", "streamed upload"))
            body = b""
        body = self.redactor.body(body or b"", content_type)
        return uri, f"{method} {target} HTTP/1.1", self.redactor.headers(headers), body

    def _record(self, request: requests.PreparedRequest, raw: Any, body: bytes) -> None:
        # a snapshot of what the exchange was; the rest of the work is left to the writer
        method, url, request_body = request.method or "GET", request.url or "", request.body
        # iteritems: what items() gives, without list() walking the headers twice (once for the length)
        header_items, response_headers = list(request.headers.items()), list(raw.headers.iteritems())
        status_line, protocol, date = f"{raw.status} {raw.reason or ''}".strip(), _http_version(raw), warc_date()

        def build() -> list:
            # redaction, digests and gzip run on the WARC writer's thread, not the platform's
            uri, request_line, request_headers, recorded_body = self._request_parts(method, url, header_items,
                                                                                    request_body)
            return self.factory.pair(uri=uri, request_line=request_line, request_headers=request_headers,
                                     request_body=recorded_body, status_line=status_line,
                                     response_headers=_recorded_response_headers(response_headers, decoded=False),
                                     response_body=body, protocol=protocol, extra={"WARC-Date": date})

        self.sink.write_records(build, size=len(body))

    # --- sending ---
    def _wait(self, decision: Wait, url: str, why: str) -> None:
        if decision.asked_by_server:  # the server said how long (429 reset headers, 503 Retry-After)
            self.sink.rate_limited(decision.seconds, url)
            if not self.sink.sleep(decision.seconds):
                raise HarvestStopped("harvest stopping during a wait the server asked for")
            return
        self.sink.debug(f"{why} from {url}; retry {decision.attempt.failures}/{self.policy.retries} "
                        f"in {decision.seconds:.1f}s")
        if not self.sink.sleep(decision.seconds):
            raise HarvestStopped("harvest stopping; retry abandoned")

    def _error(self, decision: GiveUp, url: str, raw: Any, exc: Exception | None) -> Exception:
        """The engine error for the policy's verdict, worded as the platforms' logs have always had it; the URL
        without its query (a paged API's query runs to kilobytes, and the WARC holds it whole)."""
        status, url = decision.status, bare_url(url)
        if decision.code == codes.UNAUTHORIZED:
            return Unauthorized(f"{url} answered {status} {raw.reason}: credentials refused", status=status)
        if decision.code == codes.RATE_LIMITED:
            return RateLimited(f"{url} still rate limited after {decision.attempt.rate_limits} waits "
                               f"(next wait {decision.wait or 0.0:.0f}s)", status=status)
        if decision.reason == "wait_too_long":
            return RemoteError(f"{url} answered {status} asking to retry after {decision.wait or 0.0:.0f}s "
                               f"(more than {self.policy.max_wait:.0f}s)", status=status)
        if exc is not None:
            why = self.redactor.text(_URL_AGAIN.sub("", str(exc)))
            return RemoteError(f"{type(exc).__name__} from {url} after {self.policy.retries} retries: {why}")
        return RemoteError(f"{url} answered {status} after {self.policy.retries} retries", status=status)

    def send(self, request: requests.PreparedRequest, stream: bool = False, timeout: Any = None,
             verify: Any = True, cert: Any = None, proxies: Any = None) -> requests.Response:
        attempt = Attempt()
        while True:
            if self.sink.requests_refused():
                raise HarvestStopped(f"harvest stopping; not requesting {self._shown(request)}")
            try:
                response, body = self._exchange(request, stream=stream, timeout=timeout, verify=verify, cert=cert,
                                                proxies=proxies)
                raw = response.raw
                if body is None:
                    return self._stream_response(request, response)
            except TRANSIENT as exc:
                decision = self.policy.decide(status=None, headers={}, attempt=attempt, now=time.time(),
                                              jitter=random.random())
                if isinstance(decision, Wait):
                    self._wait(decision, self._shown(request), type(exc).__name__)
                    attempt = decision.attempt
                    continue
                if isinstance(decision, GiveUp):
                    raise self._error(decision, self._shown(request), None, exc) from None
                raise  # handed on as it is (the policy never does this with a connection error today)
            self._record(request, raw, body)
            status = raw.status
            self.sink.debug(functools.partial(self._exchanged, request, status, len(body)))
            decision = self.policy.decide(status=status, headers=raw.headers, attempt=attempt, now=time.time(),
                                          jitter=random.random())
            if isinstance(decision, Wait):
                self._wait(decision, self._shown(request), f"HTTP {status}")
                attempt = decision.attempt
                continue
            if isinstance(decision, GiveUp):
                raise self._error(decision, self._shown(request), raw, None)
            return self._with_body(request, response, body)

    def _exchanged(self, request: requests.PreparedRequest, status: int, size: int) -> str:
        return f"{request.method} {self._shown(request)} -> {status} ({size} bytes)"

    def _shown(self, request: requests.PreparedRequest) -> str:
        """The request's URL as messages show it (redacted): made only for a message, not for every request."""
        return self.redactor.url(request.url or "")

    def _stream_response(self, request: requests.PreparedRequest, response: requests.Response) -> requests.Response:
        raw = response.raw
        uri, request_line, request_headers, request_body = self._request_parts(
            request.method or "GET", request.url or "", list(request.headers.items()), request.body)
        recording = StreamRecording(
            sink=self.sink, factory=self.factory, upstream=raw, max_line_bytes=self.limits.max_line_bytes,
            pair=dict(uri=uri, request_line=request_line, request_headers=request_headers,
                      request_body=request_body, status_line=f"{raw.status} {raw.reason or ''}".strip(),
                      response_headers=_recorded_response_headers(raw.headers.items(), decoded=True),
                      protocol=_http_version(raw)),
        )
        headers = raw.headers.copy()
        for name in ("Content-Encoding", "Content-Length"):
            headers.discard(name)  # the tap hands out decoded bytes of unknown length
        tap = urllib3.HTTPResponse(
            body=recording, headers=headers, status=raw.status, version=raw.version, reason=raw.reason,
            preload_content=False, decode_content=False, request_method=request.method,
            request_url=request.url, enforce_content_length=False,
        )
        self.sink.add_stream(recording)
        self.sink.debug(f"{request.method} {uri} -> {raw.status} (stream)")
        response = self.build_response(request, tap)
        response.__class__ = LineStreamResponse  # same object, requests' iter_lines replaced by a linear one
        return response
