"""The capture clock on its own (harvesters/capture.py): a capture of a URI whose second is taken moves to
the next free second, old URIs are forgotten, and the work per capture does not grow with the URIs seen."""

from __future__ import annotations

from swath.harvesters.capture import CaptureClock

T0 = "2026-11-27T03:00:00Z"


class _CountedUri(str):
    """A URI that counts how often it is hashed: the work a dict does with it (rebuilds included)."""

    hashes = 0

    def __hash__(self) -> int:
        _CountedUri.hashes += 1
        return super().__hash__()


def test_a_second_capture_of_a_uri_in_the_same_second_takes_the_next_one():
    clock = CaptureClock()
    assert clock.date("https://a.example/1", T0) == T0
    assert clock.date("https://a.example/1", T0) == "2026-11-27T03:00:01Z"
    assert clock.date("https://a.example/2", T0) == T0  # another URI keeps its own second


def test_a_uri_recaptured_after_thousands_of_others_within_the_window_still_gets_its_own_second():
    clock = CaptureClock()
    clock.date("https://a.example/first", T0)
    for i in range(3 * CaptureClock.PRUNE_AT):
        clock.date(f"https://a.example/{i}", T0)
    assert clock.date("https://a.example/first", T0) == "2026-11-27T03:00:01Z"


def test_uris_older_than_the_window_are_forgotten():
    clock = CaptureClock()
    for i in range(2 * CaptureClock.PRUNE_AT):
        clock.date(f"https://old.example/{i}", T0)
    later = "2026-11-27T03:10:00Z"  # ten minutes on: none of those can collide again
    for i in range(10):
        clock.date(f"https://new.example/{i}", later)
    assert len(clock._last) <= CaptureClock.PRUNE_AT
    assert clock.date("https://new.example/0", later) == "2026-11-27T03:10:01Z"  # the recent ones are kept


def test_work_per_capture_stays_bounded_past_the_prune_size():
    # the old clock rebuilt its whole table on every capture past PRUNE_AT URIs within the window:
    # 20,000 URIs in one second cost ~10^8 hashes there; here a few per capture
    clock = CaptureClock()
    uris = [_CountedUri(f"https://a.example/{i}") for i in range(5 * CaptureClock.PRUNE_AT)]
    _CountedUri.hashes = 0
    for uri in uris:
        clock.date(uri, T0)
    assert _CountedUri.hashes <= 8 * len(uris)
