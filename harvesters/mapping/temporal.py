"""Temporal coverage from the forms DCAT catalogs use: ISO intervals, single years or months, gov.uk URIs."""

from __future__ import annotations

import calendar
import datetime as dt
import re

from swath.harvesters.mapping.dataset import TemporalCoverage

_PARTIAL = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?(?:[T ][\d:.]+(?:Z|[+-]\d{2}:?\d{2})?)?$")
_GOVUK = re.compile(r"reference\.data\.gov\.uk/id/(year|half|quarter|month|day|gregorian-interval)/(.+?)/?$")
_DURATION = re.compile(r"^P(?:(\d+)Y)?(?:(\d+)M)?(?:(\d+)D)?$")


def _bounds(text: str) -> tuple[dt.date, dt.date] | None:
    """First and last day of a YYYY, YYYY-MM or YYYY-MM-DD (with an optional time, ignored)."""
    match = _PARTIAL.match(text.strip())
    if not match:
        return None
    year, month, day = int(match[1]), match[2], match[3]
    try:
        if day:
            date = dt.date(year, int(month), int(day))
            return date, date
        if month:
            m = int(month)
            return dt.date(year, m, 1), dt.date(year, m, calendar.monthrange(year, m)[1])
        return dt.date(year, 1, 1), dt.date(year, 12, 31)
    except ValueError:
        return None


def _coverage(start: dt.date, end: dt.date | None) -> TemporalCoverage | None:
    if end is None:
        return TemporalCoverage(start=start.isoformat())
    return TemporalCoverage(start=start.isoformat(), end=end.isoformat()) if start <= end else None


def from_range(start: str | None, end: str | None) -> TemporalCoverage | None:
    """schema:startDate/endDate (or dcat:startDate/endDate); a missing end is an open-ended coverage."""
    first = _bounds(start) if start else None
    last = _bounds(end) if end else None
    if not first:
        return None
    return _coverage(first[0], last[1] if last else None)


def from_literal(text: str) -> TemporalCoverage | None:
    """`YYYY[-MM[-DD]]/YYYY[-MM[-DD]]`, or a single `YYYY` / `YYYY-MM` / `YYYY-MM-DD`."""
    text = text.strip()
    if text.count("/") == 1:
        start, end = text.split("/")
        first, last = _bounds(start), _bounds(end)
        return _coverage(first[0], last[1]) if first and last else None
    bounds = _bounds(text)
    return _coverage(*bounds) if bounds else None


def from_govuk(uri: str) -> TemporalCoverage | None:
    """reference.data.gov.uk interval URIs, read from the URI itself (never fetched)."""
    match = _GOVUK.search(uri)
    if not match:
        return None
    kind, value = match[1], match[2]
    if kind in {"year", "month", "day"}:
        bounds = _bounds(value)
        return _coverage(*bounds) if bounds else None
    if kind in {"quarter", "half"}:
        part = re.match(r"^(\d{4})-([QH])([1-4])$", value)
        if not part:
            return None
        year, size, index = int(part[1]), 3 if part[2] == "Q" else 6, int(part[3])
        first_month = (index - 1) * size + 1
        if first_month + size - 1 > 12:
            return None
        last_month = first_month + size - 1
        return _coverage(dt.date(year, first_month, 1),
                         dt.date(year, last_month, calendar.monthrange(year, last_month)[1]))
    start_text, _, duration = value.partition("/")  # gregorian-interval/2011-01-01T00:00:00/P3Y
    bounds, span = _bounds(start_text), _DURATION.match(duration)
    if not bounds or not span:
        return None
    start = bounds[0]
    months = int(span[1] or 0) * 12 + int(span[2] or 0)
    year, month = divmod(start.month - 1 + months, 12)
    day = min(start.day, calendar.monthrange(start.year + year, month + 1)[1])
    end = dt.date(start.year + year, month + 1, day) + dt.timedelta(days=int(span[3] or 0) - 1)
    return _coverage(start, end)
