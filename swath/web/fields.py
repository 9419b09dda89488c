"""What people type into the web's plain fields, read into what messages and the store want: dates from the
browser's date boxes as the date-times an export.start carries."""

from __future__ import annotations

import datetime as dt
import re

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store.models import as_utc, parse_utc

BARE_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


def date_time(value: str, *, end: bool, label: str) -> str | None:
    """A date box's value as a UTC date-time: a bare date is the start of that day, or for an 'until' box its
    last microsecond (the whole day is in); a typed date-time is kept; empty is None."""
    if not value:
        return None
    if BARE_DATE.match(value):
        try:
            day = dt.date.fromisoformat(value)
        except ValueError:
            day = None
        if day is not None:
            return dt.datetime.combine(day, dt.time.max if end else dt.time.min).isoformat() + "Z"
    when = parse_utc(value) if "T" in value or " " in value else None
    if when is None:
        raise SwathError(f"{label}: {value!r} is not a date (YYYY-MM-DD)", code=codes.BAD_REQUEST)
    return as_utc(when)
