"""Engine-level harvest errors, each carrying a stable code from messages/codes.py.

They are plain Exceptions (not requests exceptions) so client libraries that retry on
requests errors (twarc, flickrapi) let them through to the engine.
"""

from __future__ import annotations

from swath.core.errors import SwathError
from swath.messages import codes


class HarvestError(SwathError):
    """Base of the errors a harvest can end with; `code` goes into the status's errors, `status` is the
    HTTP status of the answer that caused it (None when there was none, e.g. a connection error)."""


class Unauthorized(HarvestError):
    code = codes.UNAUTHORIZED  # the platform refused the credentials (401/403)


class NotFound(HarvestError):
    code = codes.TOKEN_NOT_FOUND  # a seed's account/endpoint does not exist (404)


class RateLimited(HarvestError):
    code = codes.RATE_LIMITED  # still rate limited after waiting as long as allowed


class RemoteError(HarvestError):
    code = codes.REMOTE_ERROR  # connection errors or 5xx persisted after retries (status None / the last 5xx)


class BadResponse(HarvestError):
    code = codes.BAD_RESPONSE  # a response could not be parsed or made no sense


class ResponseTooLarge(HarvestError):
    code = codes.RESPONSE_TOO_LARGE  # a response exceeded Config.max_response_bytes


class RedirectRefused(HarvestError):
    code = codes.REDIRECT_REFUSED  # a redirect leaving http(s), looping, too long, or taking credentials elsewhere


class CredentialOriginRefused(HarvestError):
    code = codes.CREDENTIAL_ORIGIN_REFUSED  # a request carrying credentials to an origin not the harvest's own


class DeadlineExceeded(HarvestError):
    code = codes.DEADLINE_EXCEEDED  # one exchange took longer than Config.http_deadline; its connection was closed


class StreamLineTooLong(HarvestError):
    code = codes.LINE_TOO_LONG  # a stream line passed Config.stream_max_line_bytes without ending


class HarvestStopped(Exception):
    """Raised by the recording session for a request made after harvest.stop/shutdown.

    Not an error: a stream loop that gets it simply ends; the engine finishes the harvest.
    """
