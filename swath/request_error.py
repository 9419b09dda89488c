"""The error of a request swath refuses (a source, a launch, a stop, an export), shared by the modules that
handle requests so that none of them has to import the requester to raise it."""

from __future__ import annotations

from swath.core.errors import SwathError


class RequestError(SwathError):
    """A request swath refuses, with a stable code from messages/codes.py."""
