"""One log record, one line that starts at the left margin: ids, URLs and answers from messages and remotes
go into log messages as they are, and a line break in one must not start a line that reads as a record."""

from __future__ import annotations

import logging
import sys

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# what could end a line or rewrite one on a terminal: C0 controls but tab, DEL, C1, the Unicode separators
_ESCAPED = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if c not in (0x09, 0x0A)}
_ESCAPED |= {0x2028: "\\u2028", 0x2029: "\\u2029", 0x0A: "\n    "}  # a line break: its next line indented


_PRINTABLE = {**_ESCAPED, 0x0A: "\\x0a", 0x09: "\\x09"}


def printable(text: str) -> str:
    """`text` on one line with every control character escaped: a value from a message shown on a terminal."""
    return text.translate(_PRINTABLE)


class OneRecordFormatter(logging.Formatter):
    """Every line after a record's first (its message's own, a traceback) is indented, other controls
    escaped, so only a record starts a line at the margin."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).translate(_ESCAPED)


def log_to_stderr(level: int | str, *, fmt: str = FORMAT) -> None:
    """The process's logging, as logging.basicConfig(stream=sys.stderr) with the one-record formatter."""
    root = logging.getLogger()
    if root.handlers:  # configured already (a host application, a test's capture): as basicConfig, leave it
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneRecordFormatter(fmt))
    root.addHandler(handler)
    root.setLevel(level)
