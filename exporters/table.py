"""Export tables as declarations: a list of Col(name, getter, transform)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, Callable

import orjson


def dig(value: Any, keys: tuple[str, ...] | list[str]) -> Any:
    """value[k1][k2]..., None as soon as a step is missing or not an object."""
    for k in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(k)
    return value


def _path_getter(path: str) -> Callable[[Any], Any]:
    keys = tuple(path.split("."))
    if len(keys) == 1:
        key = keys[0]
        return lambda item: item.item.get(key)
    return lambda item: dig(item.item, keys)


@dataclass(frozen=True)
class Col:
    """A column: its header, where the value comes from (a dotted path into the item's JSON, or a
    function of the Item), and an optional transform of that value."""

    name: str
    get: str | Callable[[Any], Any]
    transform: Callable[[Any], Any] | None = None
    fn: Callable[[Any], Any] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        getter = _path_getter(self.get) if isinstance(self.get, str) else self.get
        if self.transform is None:
            fn = getter
        else:
            transform = self.transform
            fn = lambda item: transform(getter(item))  # noqa: E731
        object.__setattr__(self, "fn", fn)


@dataclass(frozen=True)
class Table:
    name: str  # e.g. "twitter_v2"; also the file-name suffix when an export writes several tables
    columns: tuple[Col, ...]
    # Optional: compute shared per-item values once (e.g. a merged retweet) before the columns run.
    prepare: Callable[[Any], None] | None = None

    @property
    def headers(self) -> list[str]:
        return [c.name for c in self.columns]

    def row(self, item: Any) -> list[Any]:
        if self.prepare is not None:
            self.prepare(item)
        return [c.fn(item) for c in self.columns]


# --- transforms shared by tables ---

def json_list(value: Any) -> str | None:
    """Lists and objects as compact JSON (as twarc-csv does), None stays empty."""
    if value is None:
        return None
    return orjson.dumps(value).decode()


def no_newlines(value: Any) -> Any:
    """twarc-csv's mandatory escape: CR dropped, LF written as the two characters \\n."""
    if type(value) is str and ("\n" in value or "\r" in value):
        return value.replace("\r", "").replace("\n", "\\n")
    return value


def from_timestamp(value: Any) -> str | None:
    if value in (None, ""):
        return None
    return dt.datetime.fromtimestamp(int(value), dt.timezone.utc).isoformat()
