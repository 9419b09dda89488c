"""The one spelling of JSON data in type hints.

`JSON` is any value json/orjson read; `JSONObject` is an object of them (a message body, a schema, a harvested
record). `JSONable` is what may be written as JSON: read-only views, so a `dict[str, str]` is one (a dict is
invariant in its values, a Mapping is not). Code that only passes values through takes `object` or
`Mapping[str, object]`; code that reads a body whose shape a schema fixes reads it through a TypedDict
(messages/bodies.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
JSONObject: TypeAlias = dict[str, JSON]
JSONable: TypeAlias = Mapping[str, "JSONable"] | Sequence["JSONable"] | str | int | float | bool | None
