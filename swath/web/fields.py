"""What people type into the web's plain fields, read into what messages and the store want: dates from the
browser's date boxes as the date-times an export.start carries; names (any characters) and the folder names made
from them (Dépôt -> depot). Every refusal starts with the label of the field it is about."""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable

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


NAME_MAX = 200  # a set's or a collection's name: any characters, at most this many (the store's column)
FOLDER_MAX = 80  # a folder name: what core.paths.safe_id keeps unchanged
FOLDER = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,79}$")
# the same as an HTML pattern: valid under the `v` flag browsers compile it with (a bare '-' in a class is not)
FOLDER_PATTERN = r"[A-Za-z0-9_\-][A-Za-z0-9._\-]*"


def name(value: str, *, label: str = "Name") -> str:
    """A display name as typed (trimmed): letters of any script, punctuation, emoji; no control characters."""
    if not value:
        raise SwathError(f"{label}: a name is needed", code=codes.BAD_REQUEST)
    if len(value) > NAME_MAX:
        raise SwathError(f"{label}: at most {NAME_MAX} characters ({len(value)} typed)", code=codes.BAD_REQUEST)
    if any(unicodedata.category(ch) == "Cc" for ch in value):
        raise SwathError(f"{label}: no line breaks or control characters", code=codes.BAD_REQUEST)
    return value


def folder(value: str, *, label: str = "Folder name") -> str:
    """A typed folder name, checked: ASCII letters, digits, '.', '_' and '-', not starting with '.'."""
    if not FOLDER.match(value):
        raise SwathError(f"{label}: {value[:FOLDER_MAX]!r} is not a folder name: use up to {FOLDER_MAX} letters "
                         "a-z, digits, '.', '_' and '-', not starting with '.' (or leave it empty: it is made "
                         "from the name)", code=codes.BAD_REQUEST)
    return value


def folder_from(text: str, limit: int = 60) -> str:
    """A folder name made from a display name by transliteration: accents dropped (NFKD), other characters runs
    of '-' (Dépôt -> depot, Archives été 2026 -> archives-ete-2026); empty for a name with no Latin letter."""
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")[:limit].strip("-")


def free_folder(base: str, taken: Callable[[str], bool]) -> str:
    """`base`, or `base-2`, `base-3`... the first that is not `taken`."""
    n = 1
    while taken(candidate := base if n == 1 else f"{base}-{n}"):
        n += 1
    return candidate
