"""Byte ranges of JSON values inside a response body, so json_full can write each item exactly as returned.

Re-serialising a parsed item would change escapes (Twitter v1.1 writes "\\/"), spacing and number
forms; slicing the original bytes keeps them. Only the json_full format pays for this scan.
A key repeated in one object reads as JSON parsers read it: its last value counts, so values found
under an earlier copy of the key are dropped, and a value holding a repeated key is marked.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

# A string (escapes included) or one structural character; everything else is scalar filler.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]')
_OPEN = {0x7B, 0x5B}  # { [
_CLOSE = {0x7D, 0x5D}  # } ]

ANY = "*"  # path step: every element of an array


@dataclass
class Spans:
    spans: list[tuple[int, int]] = field(default_factory=list)  # (start, end) of each value, last copies only
    repeated: list[bool] = field(default_factory=list)  # per span: a key repeats somewhere inside the value
    duplicate_keys: int = 0  # repeated keys seen in the whole body


class _Frame:
    __slots__ = ("is_object", "slot", "expecting_key", "start", "keys", "value_from", "repeats")

    def __init__(self, is_object: bool, start: int, spans_so_far: int) -> None:
        self.is_object = is_object
        self.slot: str | None = None if is_object else ANY  # key being filled, or ANY
        self.expecting_key = is_object
        self.start = start
        self.keys: dict[str, tuple[int, int]] = {}  # key -> the span indices its (last) value produced
        self.value_from = spans_so_far  # span index where the current key's value began
        self.repeats = False  # a repeated key in this value or below


def scan_spans(body: bytes, path: tuple[str, ...]) -> Spans:
    """Every object/array value at `path`, e.g. ("statuses", ANY) or ("photo",), read as a parser reads it."""
    out = Spans()
    dropped: set[int] = set()
    stack: list[_Frame] = []
    depth_target = len(path)

    def end_value(frame: _Frame) -> None:  # the value of frame.slot ended: remember which spans it gave
        if frame.is_object and frame.slot is not None:
            frame.keys[frame.slot] = (frame.value_from, len(out.spans))

    for m in _TOKEN.finditer(body):
        pos = m.start()
        tok = body[pos]
        if tok == 0x22:
            top = stack[-1] if stack else None
            if top is not None and top.is_object and top.expecting_key:
                key = m.group()[1:-1].decode("utf-8", "replace")
                if key in top.keys:  # the earlier value is overridden: so are the spans found in it
                    lo, hi = top.keys[key]
                    dropped.update(range(lo, hi))
                    out.duplicate_keys += 1
                    top.repeats = True
                top.slot, top.expecting_key, top.value_from = key, False, len(out.spans)
        elif tok in _OPEN:
            stack.append(_Frame(tok == 0x7B, pos, len(out.spans)))
        elif tok in _CLOSE:
            if not stack:
                continue
            frame = stack.pop()
            end_value(frame)
            if frame.repeats and stack:
                stack[-1].repeats = True
            if len(stack) == depth_target and all(f.slot == p for f, p in zip(stack, path)):
                out.spans.append((frame.start, pos + 1))
                out.repeated.append(frame.repeats)
        elif tok == 0x2C and stack and stack[-1].is_object:  # ',' inside an object: a key comes next
            end_value(stack[-1])
            stack[-1].expecting_key = True
    if dropped:
        kept = [n for n in range(len(out.spans)) if n not in dropped]
        out.spans = [out.spans[n] for n in kept]
        out.repeated = [out.repeated[n] for n in kept]
    return out

