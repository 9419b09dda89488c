"""Stored times and sizes as people read them ("3 min ago", "2026-11-22 21:50 UTC", "1.5 MB"), and the template
environment that has them as filters (the web application's pages and the status page)."""

from __future__ import annotations

import datetime as dt

from jinja2 import ChoiceLoader, Environment, PackageLoader, select_autoescape

from swath.shared.records import stats_total
from swath.store.models import parse_utc, utcnow


def human_time(value: dt.datetime | str | None) -> str:
    """A stored time as 'YYYY-MM-DD HH:MM UTC', without microseconds; '-' when unset."""
    when = parse_utc(value)
    return when.strftime("%Y-%m-%d %H:%M UTC") if when else "-"


def ago(value: dt.datetime | str | None, now: dt.datetime | None = None) -> str:
    when = parse_utc(value)
    if when is None:
        return "-"
    seconds = int(((now or utcnow()) - when).total_seconds())
    if seconds < 0:
        return "in " + _span(-seconds)
    return "just now" if seconds < 10 else _span(seconds) + " ago"


def _span(seconds: int) -> str:
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}" + ("s" if unit == "day" and n > 1 else "")
    return f"{seconds} s"


def human_size(n: int | None) -> str:
    size = float(n or 0)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def environment(package: str) -> Environment:
    """The templates of `package` (its templates/ folder, then the shared ones: pager.html) with the filters above
    and stats totals."""
    loader = ChoiceLoader([PackageLoader(package, "templates"), PackageLoader("swath.shared", "templates")])
    env = Environment(loader=loader, autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(when=human_time, ago=ago, size=human_size, totals=stats_total)
    return env
