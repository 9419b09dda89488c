"""SWATH_WEB_URL: the public address of `swath web` (behind a reverse proxy, with its path prefix), from which
every absolute link swath makes outside a request is built (mails, the CLI's lines), and whose path the web
application is served under (`swath web` gives it to uvicorn as root_path)."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from swath.core.errors import SwathError
from swath.core.masking import mask_url

DEFAULT_WEB_URL = "http://127.0.0.1:8000"  # where `swath web` listens unless told otherwise
WEB_URL_INVALID = "web_url_invalid"  # messages.codes.WEB_URL_INVALID (core sits below messages)
# a path of plain segments: what a proxy's location and a link both carry unchanged
_PREFIX = re.compile(r"(/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)*")


class WebUrlInvalid(SwathError):
    code = WEB_URL_INVALID


def parse_web_url(raw: str) -> str:
    """The base URL without a trailing slash: http(s)://host[:port][/prefix]; anything else refused in one line."""
    text = raw.strip()
    if not text:
        return DEFAULT_WEB_URL
    try:
        parts = urlsplit(text)
        port_ok = parts.port is None or 0 < parts.port  # .port raises on a port out of range or not a number
    except ValueError:
        port_ok = False
    path = parts.path.rstrip("/") if port_ok else ""
    if (not port_ok or parts.scheme not in ("http", "https") or not parts.hostname or parts.username is not None
            or parts.query or parts.fragment or "?" in text or "#" in text or not _PREFIX.fullmatch(path)
            or any(ch.isspace() or not ch.isprintable() for ch in text)):  # urlsplit drops tabs and newlines
        raise WebUrlInvalid(f"SWATH_WEB_URL must be the public address of swath web, http(s)://host[:port][/prefix] "
                            f"(no user, query or fragment), got {mask_url(text)!r}")
    return urlunsplit((parts.scheme, parts.netloc.lower(), path, "", ""))


def web_prefix(web_url: str) -> str:
    """The path the application is served under: '' at the root, else '/prefix'."""
    return urlsplit(web_url).path


def web_link(web_url: str, path: str) -> str:
    """An absolute link to `path` (a path of the application, '/runs/x') at `web_url`."""
    return web_url + path
