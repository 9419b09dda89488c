"""Pages of a long list: which page a query asks for (`?<param>=N`), the rows' offset and limit for the store
query, and the numbers the pager (macros.html `pager`) shows, so a page's work stays the same however many rows
the installation holds (issue #32)."""

from __future__ import annotations

from dataclasses import dataclass

from starlette.requests import Request

from swath.web import prefix

PER_PAGE = 25  # rows of a list page: the home page's sets, /exports, /status's sources and WARC volume


@dataclass(frozen=True)
class Pager:
    param: str  # the query parameter naming the page
    number: int  # 1-based, within 1..pages
    total: int  # rows in the whole list (one COUNT)
    per_page: int = PER_PAGE

    @property
    def pages(self) -> int:
        return max(1, -(-self.total // self.per_page))

    @property
    def offset(self) -> int:
        return (self.number - 1) * self.per_page

    @property
    def first(self) -> int:
        return min(self.offset + 1, self.total)

    @property
    def last(self) -> int:
        return min(self.offset + self.per_page, self.total)

    prev: str | None = None  # the previous page's URL (None on the first)
    next: str | None = None


def pager(request: Request, param: str, total: int, per_page: int = PER_PAGE, *, path: str | None = None) -> Pager:
    """The page `?<param>=` asks for, brought within the list (not a number: the first); its links go to `path`
    (default: this request's; a live part's links go to its page)."""
    wanted = request.query_params.get(param, "1")
    pages = max(1, -(-total // per_page))
    number = min(max(int(wanted), 1), pages) if wanted.isdigit() and len(wanted) < 10 else 1
    return Pager(param=param, number=number, total=total, per_page=per_page,
                 prev=_href(request, path, param, number - 1) if number > 1 else None,
                 next=_href(request, path, param, number + 1) if number < pages else None)


def _href(request: Request, path: str | None, param: str, number: int) -> str:
    """The page's path with page `number` of the list, the query's other parameters (other lists' pages) kept."""
    url = request.url.include_query_params(**{param: number})
    return f"{prefix.root(request) + path if path else url.path}?{url.query}"
