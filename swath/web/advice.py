"""Refusals as a browser user reads them: the store and the requester word their messages for the command line
(`swath harvest stop NAME` ends it); on a page such a clause is dropped, and so is a raw pattern, since the page
offers the button that does it instead (error.html: back to the page the user came from)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from starlette.requests import Request

from swath.web import prefix

_COMMAND_ASIDE = re.compile(r"\s*\([^()]*`swath [^`]*`[^()]*\)")  # "(… `swath harvest purge` …)"
_PATTERN = re.compile(r" does not match '[^']*'")  # a JSON Schema pattern quoted whole


def for_browser(message: str) -> str:
    """`message` without the command-line advice and quoted patterns it carries."""
    text = _PATTERN.sub(" is not in the form it takes", _COMMAND_ASIDE.sub("", message))
    kept = [part for part in re.split(r"; |: (?=`swath )", text) if "`swath " not in part]
    return "; ".join(kept).strip() or "swath refused this"


def back_to(request: Request) -> str:
    """The page of this site the request came from (its Referer, same origin), else the home page."""
    came = urlsplit(request.headers.get("referer", ""))
    same = came.netloc == request.url.netloc and came.scheme in ("http", "https")
    path = came.path + (f"?{came.query}" if came.query else "")
    return path if same and path.startswith("/") and not path.startswith("//") else prefix.root(request) + "/"
