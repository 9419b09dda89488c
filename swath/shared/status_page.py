"""The status page: its templates here (the web application's stylesheet, human dates and sizes, names beside
ids). `swath dashboard` serves it reloading itself; `swath web` at /status, fetching its changing part
(/status/live, static/live.js) instead of reloading the page."""

from __future__ import annotations

import functools
from typing import Any

from jinja2 import Environment

from swath.shared import humanize
from swath.shared.snapshot import Names, Snapshot


@functools.cache
def _environment() -> Environment:
    return humanize.environment("swath.shared")


def render(snap: Snapshot, *, refresh: int | None, generated: str, live_url: str | None = None,
           part: bool = False, pages: dict[str, Any] | None = None) -> str:
    """The page; it reloads every `refresh` s, or (the web's) fetches its changing part from `live_url`. `part`:
    only that part (status_body.html). `pages`: the pagers (swath/web/paging.py) of the lists the snapshot
    holds a page of."""
    return _environment().get_template("status_body.html" if part else "status.html").render(
        snap=snap, names=snap.names or Names(sets={}, sources=[]), refresh=refresh, generated=generated,
        live_url=live_url, pages=pages or {})
