"""The status page: its templates here (the web application's stylesheet, human dates and sizes, names beside
ids). `swath dashboard` and `swath web` (at /status) serve the page, and its changing parts as JSON (`parts`),
which static/live.js puts in place of the parts that changed: no reload, so scroll position and focus stay."""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment

from swath.shared import humanize, live_parts
from swath.shared.snapshot import Names, Snapshot


@functools.cache
def _environment() -> Environment:
    return humanize.environment("swath.shared")


def render(snap: Snapshot, *, generated: str, refresh: int | None = None, live_url: str | None = None,
           every: int = 10, pages: dict[str, Any] | None = None, root: str = "", reload_url: str = "") -> str:
    """The page. `live_url`: where live.js fetches `parts` every `every` s; `refresh`: seconds between reloads
    without JavaScript (noscript). `pages`: the pagers (swath/web/paging.py) of the lists the snapshot holds a
    page of. `root`: the path prefix the application is served under."""
    return _environment().get_template("status.html").render(
        snap=snap, names=snap.names or Names(sets={}, sources=[]), refresh=refresh, generated=generated,
        live_url=live_url, every=every, pages=pages or {}, root=root, reload_url=reload_url or f"{root}/")


def parts(snap: Snapshot, *, generated: str, pages: dict[str, Any] | None = None, root: str = "") -> dict[str, Any]:
    """The page's changing parts as JSON: {"generated": ..., "parts": {name: html}} (live_parts.split)."""
    body = _environment().get_template("status_body.html").render(
        snap=snap, names=snap.names or Names(sets={}, sources=[]), pages=pages or {}, root=root)
    return {"generated": generated, "parts": live_parts.split(body)}
