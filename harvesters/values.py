"""Values from remote APIs made safe to use: a JSON body parsed or refused with `bad_response` (a document
nested deeper than Python's parser recurses is refused by name, never a RecursionError), and ids and names
as text before they reach a status (numbers as their decimal string; anything else refused)."""

from __future__ import annotations

import math
from typing import Any

import requests

from swath.harvesters.errors import BadResponse

MAX_DIGITS = 40  # longer "ids" are refused (and int() of >4300 digits would raise)
NESTED = "nested too deeply to read"  # the words every refusal of a too-deep document uses


def json_body(response: requests.Response, *, what: str, seed_id: str | None = None) -> Any:
    """The response's JSON; BadResponse when it is not JSON or is nested too deeply."""
    try:
        return response.json()
    except RecursionError:
        raise BadResponse(f"{what}: the JSON is {NESTED}", seed_id=seed_id) from None
    except ValueError:
        raise BadResponse(f"{what}: the answer is not JSON", seed_id=seed_id) from None


def field(document: object, *keys: str) -> object:
    """A nested field of a remote document, or None where a step is missing or not an object."""
    for key in keys:
        if not isinstance(document, dict):
            return None
        document = document.get(key)
    return document


def as_text(value: object) -> str | None:
    """A remote id or name as a status carries it: a non-empty string as it is, an integer (or an integral
    float) as its decimal string; None for anything else (null, booleans, objects, lists, "")."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return str(int(value))
    if isinstance(value, str) and value:
        return value
    return None


def as_number(value: object) -> int | None:
    """A remote numeric id (an integer, or a string of ASCII digits) as an int; None for anything else."""
    text = as_text(value)
    if text is None or not (text.isascii() and text.isdigit()) or len(text) > MAX_DIGITS:
        return None
    return int(text)


def kind_of(value: object) -> str:
    """How a refused value is named in a message: its JSON type, never the value (it may be huge)."""
    if isinstance(value, str):
        return "a string" if value else "an empty string"
    return {type(None): "null", bool: "a boolean", int: "a number", float: "a number", dict: "an object",
            list: "a list"}.get(type(value), type(value).__name__)
