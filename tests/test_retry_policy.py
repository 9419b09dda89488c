"""The retry policy on its own (harvesters/retry.py): no sockets, no sleeping; the expected waits are worked out
from the headers, the tally and the policy's numbers in each case."""

from __future__ import annotations

import dataclasses
import email.utils
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swath.harvesters.retry import (
    JITTER,
    MAX_BACKOFF,
    MAX_RATE_LIMITS,
    MAX_RATE_WAIT,
    Attempt,
    GiveUp,
    Respond,
    RetryPolicy,
    Wait,
    rate_limit_wait,
    retry_after_wait,
)
from swath.messages import codes

NOW = 1_700_000_000.0  # an epoch well past the 1e9 that tells a reset epoch from a number of seconds
ENGINE = RetryPolicy(retries=3, backoff=0.5)  # as the engine builds it from Config (http_retries=3 here)
BACKEND = RetryPolicy(retries=5, backoff=None, max_wait=600.0, max_rate_limits=0)  # as harvesters.backends does


def http_date(epoch: float) -> str:
    return email.utils.formatdate(epoch, usegmt=True)


def tally(failures: int = 0, rate_limits: int = 0) -> Attempt:
    return Attempt(failures=failures, rate_limits=rate_limits)


# (policy, status, headers, tally before, jitter draw) -> expected decision
CASES = {
    "200 goes to the caller": (ENGINE, 200, {}, tally(), 0.5, Respond()),
    "404 goes to the caller": (ENGINE, 404, {}, tally(), 0.5, Respond()),
    "501 is final": (ENGINE, 501, {"Retry-After": "5"}, tally(), 0.5, Respond()),
    "505 is final": (ENGINE, 505, {}, tally(), 0.5, Respond()),
    "401 refuses the credentials": (ENGINE, 401, {}, tally(), 0.5,
                                    GiveUp(code=codes.UNAUTHORIZED, reason="unauthorized", status=401,
                                           attempt=tally())),
    "403 refuses the credentials": (ENGINE, 403, {}, tally(failures=1), 0.5,
                                    GiveUp(code=codes.UNAUTHORIZED, reason="unauthorized", status=403,
                                           attempt=tally(failures=1))),
    "first connection error: backoff": (ENGINE, None, {}, tally(), 0.5,
                                        Wait(seconds=0.5, reason="connection_error", attempt=tally(failures=1))),
    "third connection error: backoff x 4": (ENGINE, None, {}, tally(failures=2), 0.5,
                                            Wait(seconds=0.5 * 4, reason="connection_error",
                                                 attempt=tally(failures=3))),
    "connection error past the retries": (ENGINE, None, {}, tally(failures=3), 0.5,
                                          GiveUp(code=codes.REMOTE_ERROR, reason="retries_exhausted", status=None,
                                                 attempt=tally(failures=3))),
    "502, lowest draw: -20 %": (ENGINE, 502, {}, tally(), 0.0,
                                Wait(seconds=0.5 * (1 - JITTER), reason="server_error", attempt=tally(failures=1))),
    "500, highest draw: +20 %": (ENGINE, 500, {}, tally(failures=1), 1.0,
                                 Wait(seconds=0.5 * 2 * (1 + JITTER), reason="server_error",
                                      attempt=tally(failures=2))),
    "backoff capped at 60 s": (RetryPolicy(retries=10, backoff=10.0), 502, {}, tally(failures=6), 0.5,
                               Wait(seconds=MAX_BACKOFF, reason="server_error", attempt=tally(failures=7))),
    "502 past the retries": (ENGINE, 502, {}, tally(failures=3, rate_limits=2), 0.5,
                             GiveUp(code=codes.REMOTE_ERROR, reason="retries_exhausted", status=502,
                                    attempt=tally(failures=3, rate_limits=2))),
    "503 Retry-After seconds": (ENGINE, 503, {"Retry-After": "7"}, tally(), 0.5,
                                Wait(seconds=7.0, reason="retry_after", attempt=tally(failures=1))),
    "503 Retry-After date": (ENGINE, 503, {"retry-after": http_date(NOW + 90)}, tally(), 0.5,
                             Wait(seconds=90.0, reason="retry_after", attempt=tally(failures=1))),
    "503 Retry-After date already past": (ENGINE, 503, {"Retry-After": http_date(NOW - 90)}, tally(), 0.5,
                                          Wait(seconds=0.0, reason="retry_after", attempt=tally(failures=1))),
    "503 Retry-After over the bound": (ENGINE, 503, {"Retry-After": str(int(MAX_RATE_WAIT) + 60)}, tally(), 0.5,
                                       GiveUp(code=codes.REMOTE_ERROR, reason="wait_too_long", status=503,
                                              attempt=tally(), wait=MAX_RATE_WAIT + 60)),
    "503 Retry-After past the retries": (ENGINE, 503, {"Retry-After": "1"}, tally(failures=3), 0.5,
                                         GiveUp(code=codes.REMOTE_ERROR, reason="retries_exhausted", status=503,
                                                attempt=tally(failures=3))),
    "503 unreadable Retry-After: backoff": (ENGINE, 503, {"Retry-After": "soon"}, tally(), 0.5,
                                            Wait(seconds=0.5, reason="server_error", attempt=tally(failures=1))),
    "503 with only a reset header: backoff": (ENGINE, 503, {"x-rate-limit-reset": str(int(NOW) + 30)}, tally(),
                                              0.5, Wait(seconds=0.5, reason="server_error",
                                                        attempt=tally(failures=1))),
    "502 Retry-After is not read": (ENGINE, 502, {"Retry-After": "7"}, tally(), 0.5,
                                    Wait(seconds=0.5, reason="server_error", attempt=tally(failures=1))),
    "429 reset epoch, +1 s": (ENGINE, 429, {"x-rate-limit-reset": str(int(NOW) + 30)}, tally(), 0.5,
                              Wait(seconds=31.0, reason="rate_limited", attempt=tally(rate_limits=1))),
    "429 X-RateLimit-Reset in seconds, +1 s": (ENGINE, 429, {"X-RateLimit-Reset": "30"}, tally(rate_limits=4), 0.5,
                                               Wait(seconds=31.0, reason="rate_limited",
                                                    attempt=tally(rate_limits=5))),
    "429 Bluesky ratelimit-reset epoch, +1 s": (ENGINE, 429, {"ratelimit-reset": str(int(NOW) + 20),
                                                             "ratelimit-remaining": "0"}, tally(), 0.5,
                                                Wait(seconds=21.0, reason="rate_limited",
                                                     attempt=tally(rate_limits=1))),
    "429 reset already past": (ENGINE, 429, {"x-ratelimit-reset": str(int(NOW) - 30)}, tally(), 0.5,
                               Wait(seconds=0.0, reason="rate_limited", attempt=tally(rate_limits=1))),
    "429 Retry-After seconds": (ENGINE, 429, {"Retry-After": "12"}, tally(failures=2), 0.5,
                                Wait(seconds=12.0, reason="rate_limited", attempt=tally(failures=2, rate_limits=1))),
    "429 unreadable reset, Retry-After date": (ENGINE, 429, {"x-rate-limit-reset": "soon",
                                                             "Retry-After": http_date(NOW + 45)}, tally(), 0.5,
                                               Wait(seconds=45.0, reason="rate_limited",
                                                    attempt=tally(rate_limits=1))),
    "429 without headers: 2 s first": (ENGINE, 429, {}, tally(), 0.5,
                                       Wait(seconds=1.0 * 2, reason="rate_limited", attempt=tally(rate_limits=1))),
    "429 without headers: doubling from the backoff": (RetryPolicy(backoff=3.0), 429, {}, tally(rate_limits=2), 0.5,
                                                        Wait(seconds=3.0 * 2 ** 3, reason="rate_limited",
                                                             attempt=tally(rate_limits=3))),
    "429 without headers: exponent stops at 10": (ENGINE, 429, {}, tally(rate_limits=20), 0.5,
                                                   Wait(seconds=1.0 * 2 ** 10, reason="rate_limited",
                                                        attempt=tally(rate_limits=21))),
    "429 without headers: at most the bound": (RetryPolicy(backoff=5.0), 429, {}, tally(rate_limits=9), 0.5,
                                               Wait(seconds=MAX_RATE_WAIT, reason="rate_limited",
                                                    attempt=tally(rate_limits=10))),
    "429 once too often": (ENGINE, 429, {"Retry-After": "1"}, tally(rate_limits=MAX_RATE_LIMITS), 0.5,
                           GiveUp(code=codes.RATE_LIMITED, reason="too_many_rate_limits", status=429,
                                  attempt=tally(rate_limits=MAX_RATE_LIMITS + 1), wait=1.0)),
    "429 reset over the bound": (ENGINE, 429, {"x-rate-limit-reset": str(int(NOW + MAX_RATE_WAIT))}, tally(), 0.5,
                                 GiveUp(code=codes.RATE_LIMITED, reason="wait_too_long", status=429,
                                        attempt=tally(rate_limits=1), wait=MAX_RATE_WAIT + 1)),
    "backend: 503 Retry-After waits": (BACKEND, 503, {"Retry-After": "1"}, tally(failures=4), 0.5,
                                       Wait(seconds=1.0, reason="retry_after", attempt=tally(failures=5))),
    "backend: 503 Retry-After, sixth answer": (BACKEND, 503, {"Retry-After": "1"}, tally(failures=5), 0.5,
                                               GiveUp(code=codes.REMOTE_ERROR, reason="retries_exhausted",
                                                      status=503, attempt=tally(failures=5))),
    "backend: Retry-After over 600 s": (BACKEND, 503, {"Retry-After": "601"}, tally(), 0.5,
                                        GiveUp(code=codes.REMOTE_ERROR, reason="wait_too_long", status=503,
                                               attempt=tally(), wait=601.0)),
    "backend: no backoff of its own": (BACKEND, 502, {}, tally(), 0.5,
                                       GiveUp(code=codes.REMOTE_ERROR, reason="not_retried", status=502,
                                              attempt=tally())),
    "backend: 503 without Retry-After": (BACKEND, 503, {}, tally(), 0.5,
                                         GiveUp(code=codes.REMOTE_ERROR, reason="not_retried", status=503,
                                                attempt=tally())),
    "backend: 429 is not waited for": (BACKEND, 429, {"Retry-After": "1"}, tally(), 0.5,
                                       GiveUp(code=codes.RATE_LIMITED, reason="too_many_rate_limits", status=429,
                                              attempt=tally(rate_limits=1), wait=1.0)),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_decisions(case):
    policy, status, headers, attempt, jitter, expected = CASES[case]
    decided = policy.decide(status=status, headers=headers, attempt=attempt, now=NOW, jitter=jitter)
    if isinstance(decided, Wait) and isinstance(expected, Wait):  # the spread is float arithmetic
        assert decided.seconds == pytest.approx(expected.seconds)
        decided = dataclasses.replace(decided, seconds=expected.seconds)
    assert decided == expected


def test_only_waits_the_server_asked_for_count_as_rate_limiting():
    asked = [ENGINE.decide(status=429, headers={}, attempt=tally(), now=NOW),
             ENGINE.decide(status=503, headers={"Retry-After": "3"}, attempt=tally(), now=NOW)]
    ours = [ENGINE.decide(status=503, headers={}, attempt=tally(), now=NOW),
            ENGINE.decide(status=None, headers={}, attempt=tally(), now=NOW)]
    assert all(isinstance(d, Wait) and d.asked_by_server for d in asked)
    assert all(isinstance(d, Wait) and not d.asked_by_server for d in ours)


def test_header_readers():
    assert rate_limit_wait({"x-rate-limit-reset": str(int(NOW) + 30)}, now=NOW) == 31.0
    assert rate_limit_wait({"X-Rate-Limit-Reset": "nan"}, now=NOW) == 0.0  # float() reads it; never a NaN wait
    assert rate_limit_wait({"Retry-After": "-5"}, now=NOW) == 0.0
    assert rate_limit_wait({"Retry-After": ""}, now=NOW) is None
    assert rate_limit_wait({}, now=NOW) is None
    assert retry_after_wait({"x-rate-limit-reset": "30"}, now=NOW) is None  # Retry-After only
    assert retry_after_wait({"Retry-After": "Wed, 21 Oct 2015 07:28:00"}, now=NOW) == 0.0  # no zone: GMT
    assert retry_after_wait({"Retry-After": http_date(NOW + 3600)}, now=NOW) == 3600.0


# --- properties -----------------------------------------------------------------------------------------

HEADER_NAMES = ["Retry-After", "retry-after", "x-rate-limit-reset", "X-RateLimit-Reset", "x-ratelimit-reset",
                "ratelimit-reset", "X-Other"]
header_values = st.one_of(
    st.integers(min_value=-10**6, max_value=10**10).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-10**7, max_value=10**7).map(lambda delta: http_date(NOW + delta)),
    st.text(max_size=40),
)
headers = st.dictionaries(st.sampled_from(HEADER_NAMES), header_values, max_size=3)
statuses = st.one_of(st.none(), st.sampled_from([200, 301, 401, 403, 404, 429, 500, 501, 502, 503, 505]),
                     st.integers(min_value=100, max_value=599))
policies = st.builds(RetryPolicy, retries=st.integers(min_value=0, max_value=12),
                     backoff=st.one_of(st.none(), st.floats(min_value=0.0, max_value=100.0)),
                     max_wait=st.floats(min_value=0.0, max_value=5000.0),
                     max_rate_limits=st.integers(min_value=0, max_value=60))
draws = st.floats(min_value=0.0, max_value=1.0)


@given(policies, statuses, headers, st.integers(min_value=0, max_value=15), st.integers(min_value=0, max_value=70),
       st.floats(min_value=0.0, max_value=4e9), draws)
def test_waits_are_never_negative_nor_over_their_cap(policy, status, answer, failures, rate_limits, now, jitter):
    decision = policy.decide(status=status, headers=answer, attempt=tally(failures, rate_limits), now=now,
                             jitter=jitter)
    if isinstance(decision, Wait):
        cap = policy.max_wait if decision.asked_by_server else MAX_BACKOFF * (1 + JITTER)
        assert math.isfinite(decision.seconds) and 0.0 <= decision.seconds <= cap
        if decision.reason == "rate_limited":  # a wait counts once, against its own bound
            assert decision.attempt == tally(failures, rate_limits + 1) and rate_limits + 1 <= policy.max_rate_limits
        else:
            assert decision.attempt == tally(failures + 1, rate_limits) and failures + 1 <= policy.retries


@given(policies, st.lists(st.tuples(statuses, headers, draws), min_size=1, max_size=8))
def test_a_request_is_tried_a_bounded_number_of_times(policy, answers):
    """However the server answers (the answers repeat in turn), the policy stops asking to wait within its
    retries plus its rate-limit waits."""
    attempt, waits = Attempt(), 0
    for turn in range(policy.retries + policy.max_rate_limits + 2):
        status, answer, jitter = answers[turn % len(answers)]
        decision = policy.decide(status=status, headers=answer, attempt=attempt, now=NOW, jitter=jitter)
        if not isinstance(decision, Wait):
            break
        attempt, waits = decision.attempt, waits + 1
    assert not isinstance(decision, Wait)
    assert waits <= policy.retries + policy.max_rate_limits
    assert attempt.failures <= policy.retries and attempt.rate_limits <= policy.max_rate_limits
