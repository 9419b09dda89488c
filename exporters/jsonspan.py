"""Byte ranges of JSON values inside a response body, so json_full can write each item exactly as returned.

Re-serialising a parsed item would change escapes (Twitter v1.1 writes "\\/"), spacing and number
forms; slicing the original bytes keeps them. Only the json_full format pays for this scan.
"""

from __future__ import annotations

import re

# A string (escapes included) or one structural character; everything else is scalar filler.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]')
_OPEN = {0x7B, 0x5B}  # { [
_CLOSE = {0x7D, 0x5D}  # } ]

ANY = "*"  # path step: every element of an array


def value_spans(body: bytes, path: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of every object/array value at `path`, e.g. ("statuses", ANY) or ("photo",)."""
    spans: list[tuple[int, int]] = []
    # Each frame: [is_object, slot (key being filled, or ANY), expecting_key, start offset]
    stack: list[list] = []
    depth_target = len(path)
    for m in _TOKEN.finditer(body):
        pos = m.start()
        tok = body[pos]
        if tok == 0x22:
            if stack and stack[-1][0] and stack[-1][2]:
                stack[-1][1] = m.group()[1:-1].decode("utf-8", "replace")
                stack[-1][2] = False
        elif tok in _OPEN:
            stack.append([tok == 0x7B, None if tok == 0x7B else ANY, tok == 0x7B, pos])
        elif tok in _CLOSE:
            frame = stack.pop()
            if len(stack) == depth_target and all(f[1] == p for f, p in zip(stack, path)):
                spans.append((frame[3], pos + 1))
        elif tok == 0x2C and stack and stack[-1][0]:  # ',' inside an object: a key comes next
            stack[-1][2] = True
    return spans
