"""The one spelling of JSON data in type hints.

`JSON` is any value json/orjson read or write; `JSONObject` is an object of them (a message body, a schema, a
harvested record). Code that only passes values through takes `object` or `Mapping[str, object]`; code that reads
a body whose shape a schema fixes reads it through a TypedDict (messages/bodies.py).
"""

from __future__ import annotations

from typing import TypeAlias

JSON: TypeAlias = dict[str, "JSON"] | list["JSON"] | str | int | float | bool | None
JSONObject: TypeAlias = dict[str, JSON]
