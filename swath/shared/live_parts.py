"""The changing parts of a page that static/live.js updates in place: a template marks each one
`<div data-part="NAME"><!--part:NAME-->...<!--/part--></div>`, and `split` gives {NAME: the inside of that div}
(markers included, so the page tells an unchanged part by comparing). Our templates escape "<" in every value,
so a marker can only be ours."""

from __future__ import annotations

import re

_PART = re.compile(r"<!--part:(\w+)-->.*?<!--/part-->", re.DOTALL)


def split(html: str) -> dict[str, str]:
    return {m.group(1): m.group(0) for m in _PART.finditer(html)}
