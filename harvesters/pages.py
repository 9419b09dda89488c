"""One guard against endless listings, used by every paginator (generic, Tumblr, Twitter, Flickr and the
metadata backends).

A hostile or broken server can keep a listing going for ever: a `next` link or token that comes back, an
offset paged against a `total` of 10^12 that serves the same items again, or a chain of pages that never
ends. `PageGuard` remembers the cursors followed and the item ids served in one listing and raises
`PaginationLoop` (code `pagination_loop`) when a cursor repeats, a page brings only items seen already,
or the listing passes `max_pages`. `listing()` wraps one seed's listing: the loop becomes an error note for
that seed, the items got before it stay recorded and counted, and the other seeds go on.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator
from contextlib import contextmanager
from typing import Protocol

from swath.harvesters.errors import HarvestError
from swath.messages import codes

MAX_PAGES = 100_000  # a chain that never repeats still ends (10^6 to 10^7 items at the usual page sizes)
SHOWN = 120  # characters of a hostile cursor quoted in a message


class PaginationLoop(HarvestError):
    code = codes.PAGINATION_LOOP  # a cursor came back, a page held only items seen already, or too many pages


class Reporting(Protocol):
    def error(self, code: str, message: str, seed_id: str | None = None) -> None: ...


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}…"


class PageGuard:
    """The cursors and item ids of one listing; `what` names it in messages ("Tumblr blog x.tumblr.com")."""

    def __init__(self, *, what: str, seed_id: str | None = None, max_pages: int | None = MAX_PAGES) -> None:
        self.what, self.seed_id, self.max_pages = what, seed_id, max_pages
        self.looped = False  # set by listing() when the listing ended on a loop
        self.pages = 0
        self._cursors: set[Hashable] = set()
        self._items: set[Hashable] = set()

    def _loop(self, why: str) -> PaginationLoop:
        return PaginationLoop(f"{self.what}: {why} after {self.pages} page(s); listing stopped", seed_id=self.seed_id)

    def cursor(self, value: Hashable) -> None:
        """Call before following `value` (the next URL, token or page number): one already followed, or one
        past `max_pages`, raises PaginationLoop."""
        if value in self._cursors:
            raise self._loop(f"the next page {_shown(value)} was served already")
        if self.max_pages is not None and self.pages >= self.max_pages:
            raise self._loop(f"more than {self.max_pages} pages")
        self._cursors.add(value)
        self.pages += 1

    def all_seen(self, ids: Iterable[Hashable]) -> bool:
        """Whether every id was served already in this listing (True for none): what a page of an offset listing
        holds at its tail when items published meanwhile pushed the ones served already onto it."""
        return all(item_id in self._items for item_id in ids)

    def items(self, ids: Iterable[Hashable]) -> int:
        """Call with the ids of each page served: how many are new. A page that is not empty but brings
        nothing new (offset paging that serves the same items again) raises PaginationLoop."""
        before, served = len(self._items), 0
        for item_id in ids:
            self._items.add(item_id)
            served += 1
        fresh = len(self._items) - before
        if served and not fresh:
            raise self._loop(f"a page of {served} item(s) held none not served before")
        return fresh


@contextmanager
def listing(report: Reporting, *, what: str, seed_id: str | None,
            max_pages: int | None = MAX_PAGES) -> Iterator[PageGuard]:
    """One seed's listing under a PageGuard: a PaginationLoop ends it with an error note for the seed (the
    harvest is `completed failure`, what was got before is kept); check `guard.looped` before committing
    state that claims the listing was complete (an incremental high-water mark)."""
    guard = PageGuard(what=what, seed_id=seed_id, max_pages=max_pages)
    try:
        yield guard
    except PaginationLoop as exc:
        guard.looped = True
        report.error(exc.code, exc.message, seed_id)
