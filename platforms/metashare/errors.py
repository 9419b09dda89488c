"""The META-SHARE protocol's error: a refused response or LR, with a stable code from messages/codes.py."""

from __future__ import annotations

from swath.core.errors import SwathError


class MetashareError(SwathError):
    """A refused response or LR; `code=` names why, `message` says what and where."""
