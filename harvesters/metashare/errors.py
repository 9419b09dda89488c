"""One error type for the META-SHARE protocol, carrying a stable code from messages/codes.py."""

from __future__ import annotations


class MetashareError(Exception):
    """A refused response or LR; `code` is a messages.codes constant, `message` says what and where."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
