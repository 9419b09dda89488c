"""The one error type: every error swath raises on purpose is a `SwathError` with a stable code.

A status note, a CLI error line and a dead-letter reason are all read from the same four fields, so no caller
parses a message or guesses with getattr. `swath.messages.model.Note.of(error)` turns one into a status note.
"""

from __future__ import annotations

# messages/codes.py is the list of codes; this one is repeated here because core sits below messages
UNKNOWN_ERROR = "unknown_error"


class SwathError(Exception):
    """`code` (messages/codes.py), a readable `message`, the seed it concerns and the HTTP status behind it.

    Subclasses set a class-level `code` when it is always the same; `code=` overrides it per raise.
    """

    code: str = UNKNOWN_ERROR

    def __init__(self, message: str, *, code: str | None = None, seed_id: str | None = None,
                 status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.seed_id = seed_id
        self.status = status

    def __str__(self) -> str:
        return self.message
