"""The HTTP retry policy: given one answer (or a connection error), say what to do next.

Pure: no sockets, no sleeping, no clock and no randomness of its own; the caller passes the time and a
random draw in, does the waiting and keeps the tally between tries. Used by the recording adapter
(harvesters/http.py) and by `Backend.fetch` (harvesters/backends.py); docs/harvesting.md "Retries".

- connection error (`status=None`) or 5xx other than 501/505: retried `retries` times after a back-off of
  `backoff` × 2ⁿ⁻¹ s (at most 60 s, spread ±20 %); a 503 with `Retry-After` waits that long instead
  (more than `max_wait` gives up at once). Then give up with `remote_error`.
- 429: wait as the reset headers say (`x-rate-limit-reset`, `x-ratelimit-reset`, Bluesky's `ratelimit-reset`:
  epoch or seconds, +1 s; an ISO 8601 time as Mastodon sends, counted from the answer's `Date` so the two clocks
  need not agree; else `Retry-After`: seconds or HTTP date), else an increasing wait; more than `max_rate_limits`
  waits or one over `max_wait` gives up with `rate_limited`.
- 401/403 give up with `unauthorized`; anything else (2xx, 3xx, 404, 501, 505, ...) goes to the caller.
"""

from __future__ import annotations

import email.utils
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

from swath.core.config import Config
from swath.messages import codes

MAX_RATE_WAIT = 20 * 60.0  # Twitter windows are 15 minutes; a reset just past one is still waited for
MAX_RATE_LIMITS = 50
MAX_BACKOFF = 60.0  # a back-off delay never grows past this (before the ±20 % spread)
JITTER = 0.2  # back-off delays are spread by up to this fraction either way, so clients do not retry in step
FINAL_5XX = frozenset({501, 505})  # not implemented / version not supported: asking again cannot help

WaitReason = Literal["rate_limited", "retry_after", "server_error", "connection_error"]
GiveUpReason = Literal["retries_exhausted", "not_retried", "wait_too_long", "too_many_rate_limits", "unauthorized"]


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """The tally of one request's tries so far: failures retried (connection errors, 5xx) and 429 waits."""

    failures: int = 0
    rate_limits: int = 0


@dataclass(frozen=True, kw_only=True)
class Respond:
    """Hand this response to the caller as it is."""


@dataclass(frozen=True, kw_only=True)
class Wait:
    """Wait `seconds`, then send the request again, passing `attempt` to the next decide()."""

    seconds: float
    reason: WaitReason
    attempt: Attempt

    @property
    def asked_by_server(self) -> bool:
        """The server said how long (reset headers, Retry-After): the harvest counts it as rate limiting."""
        return self.reason in ("rate_limited", "retry_after")


@dataclass(frozen=True, kw_only=True)
class GiveUp:
    """Stop trying: the request fails with `code`; `wait` is the wait that was refused, if any."""

    code: str
    reason: GiveUpReason
    status: int | None
    attempt: Attempt
    wait: float | None = None


Decision = Respond | Wait | GiveUp
RESPOND = Respond()


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """What to do after each answer; `backoff=None` means no retries of our own, only waits the server asks
    for (a 503's Retry-After, 429 reset headers within `max_rate_limits`)."""

    retries: int = 5
    backoff: float | None = 0.5  # first back-off delay in seconds; doubles per failure
    max_wait: float = MAX_RATE_WAIT  # a wait the server asks for beyond this gives up instead
    max_rate_limits: int = MAX_RATE_LIMITS

    def decide(self, *, status: int | None, headers: Mapping[str, str], attempt: Attempt, now: float,
               jitter: float = 0.5) -> Decision:
        """The next step after an answer with `status` (None: a connection error or a broken body).

        `now` is the epoch time (for reset epochs and Retry-After dates); `jitter` a uniform draw in [0, 1]
        that spreads back-off delays (0.5: no spread)."""
        if status is None or (status >= 500 and status not in FINAL_5XX):
            return self._failure(status, headers, attempt, now, jitter)
        if status == 429:
            return self._rate_limited(headers, attempt, now)
        if status in (401, 403):
            return GiveUp(code=codes.UNAUTHORIZED, reason="unauthorized", status=status, attempt=attempt)
        return RESPOND

    def backoff_delay(self, failures: int, jitter: float) -> float:
        """The delay before retry number `failures` (1-based): doubling from `backoff`, capped, spread."""
        base = self.backoff or 0.0
        # the exponent is capped so a huge retry count cannot overflow; the delay is at MAX_BACKOFF long before
        delay = min(MAX_BACKOFF, base * 2.0 ** min(failures - 1, 64))
        spread = 1.0 - JITTER + 2 * JITTER * min(1.0, max(0.0, jitter))
        return delay * min(1.0 + JITTER, spread)  # the min: float rounding must not step past +20 %

    def _failure(self, status: int | None, headers: Mapping[str, str], attempt: Attempt, now: float,
                 jitter: float) -> Decision:
        failures = attempt.failures + 1
        if failures > self.retries:
            return GiveUp(code=codes.REMOTE_ERROR, reason="retries_exhausted", status=status, attempt=attempt)
        following = replace(attempt, failures=failures)
        # only a 503 is read for Retry-After: rate-limit reset headers come on every answer of some APIs
        asked = retry_after_wait(headers, now=now) if status == 503 else None
        if asked is not None:
            if asked > self.max_wait:
                return GiveUp(code=codes.REMOTE_ERROR, reason="wait_too_long", status=status, attempt=attempt,
                              wait=asked)
            return Wait(seconds=asked, reason="retry_after", attempt=following)
        if self.backoff is None:
            return GiveUp(code=codes.REMOTE_ERROR, reason="not_retried", status=status, attempt=attempt)
        return Wait(seconds=self.backoff_delay(failures, jitter),
                    reason="connection_error" if status is None else "server_error", attempt=following)

    def _rate_limited(self, headers: Mapping[str, str], attempt: Attempt, now: float) -> Decision:
        waits = attempt.rate_limits + 1
        wait = rate_limit_wait(headers, now=now)
        if wait is None:  # no reset header: wait longer each time, up to the bound
            wait = min(self.max_wait, max(self.backoff or 0.0, 1.0) * 2 ** min(waits, 10))
        following = replace(attempt, rate_limits=waits)
        if waits > self.max_rate_limits or wait > self.max_wait:
            return GiveUp(code=codes.RATE_LIMITED, reason="too_many_rate_limits" if waits > self.max_rate_limits
                          else "wait_too_long", status=429, attempt=following, wait=wait)
        return Wait(seconds=wait, reason="rate_limited", attempt=following)


def header(headers: Mapping[str, str], name: str) -> str | None:
    """A header's value by its lower-case name, from a case-insensitive mapping (requests', urllib3's) or a
    plain dict."""
    value = headers.get(name)
    if value is None:
        value = next((v for k, v in headers.items() if k.lower() == name), None)
    return value


def rate_limit_wait(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds to wait according to a reset header (epoch or seconds, +1 s) or Retry-After (seconds or date)."""
    reset = header(headers, "x-rate-limit-reset") or header(headers, "x-ratelimit-reset") \
        or header(headers, "ratelimit-reset")  # Bluesky (IETF draft RateLimit headers, epoch seconds)
    if reset:
        try:
            value = float(reset)
        except ValueError:
            until = _iso_wait(reset, header(headers, "date"), now=now)
            if until is not None:
                return _seconds(until + 1.0)
        else:
            return _seconds((value - now if value > 1e9 else value) + 1.0)
    return retry_after_wait(headers, now=now)


def _iso_wait(reset: str, date: str | None, *, now: float) -> float | None:
    """Seconds from the answer's Date (else `now`) to an ISO 8601 reset time (Mastodon's X-RateLimit-Reset)."""
    try:
        at = datetime.fromisoformat(reset.strip())
    except ValueError:
        return None
    at = at if at.tzinfo else at.replace(tzinfo=UTC)
    sent = _http_date(date) if date else None
    return at.timestamp() - (sent if sent is not None else now)


def _http_date(value: str) -> float | None:
    """The epoch time of an HTTP date; None for anything else."""
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def retry_after_wait(headers: Mapping[str, str], *, now: float) -> float | None:
    """Seconds a Retry-After header (seconds or an HTTP date) asks for; None without a usable one."""
    retry_after = header(headers, "retry-after")
    if not retry_after:
        return None
    try:
        return _seconds(float(retry_after))
    except ValueError:
        pass
    at = _http_date(retry_after)
    return None if at is None else _seconds(at - now)


def _seconds(value: float) -> float:
    """Never negative; a NaN (float("nan") parses) waits nothing, as max() made of it before."""
    return 0.0 if math.isnan(value) else max(0.0, value)


def storage_retry(config: Config) -> RetryPolicy:
    """The policy object-store calls retry by (core/objects.py `store_for`): SWATH_HTTP_RETRIES and _BACKOFF."""
    return RetryPolicy(retries=config.http_retries, backoff=config.http_backoff)
