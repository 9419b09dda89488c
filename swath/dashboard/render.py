"""The status page: the web application's status template (its stylesheet, human dates and sizes, names beside
ids), reloading itself. `swath dashboard` serves it, and `swath web` at /status."""

from __future__ import annotations

import functools

from jinja2 import Environment

from swath.dashboard.snapshot import Names, Snapshot


@functools.cache
def _environment() -> Environment:
    from swath.web.templating import environment

    return environment()


def render(snap: Snapshot, *, refresh: int, generated: str) -> str:
    return _environment().get_template("status.html").render(
        snap=snap, names=snap.names or Names(sets={}, sources=[]), refresh=refresh, generated=generated)
