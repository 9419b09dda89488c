"""Errors raised while listing or mapping remote metadata; each carries a stable code from messages/codes.py."""

from __future__ import annotations

from swath.core.errors import SwathError
from swath.messages import codes


class MetadataError(SwathError):
    """A response or item that cannot be used; `code` goes into the status message."""

    code = codes.BAD_RESPONSE


class BadDocument(MetadataError):
    """Malformed, unsafe (DTD, entities) or unrecognised XML/JSON/RDF."""

    code = codes.BAD_RESPONSE


class TooLarge(MetadataError):
    code = codes.RESPONSE_TOO_LARGE


class OAIError(MetadataError):
    """An OAI-PMH <error code="..."> answer (other than noRecordsMatch)."""

    code = codes.OAI_ERROR

    def __init__(self, oai_code: str, text: str) -> None:
        super().__init__(f"{oai_code}: {text}" if text else oai_code)
        self.oai_code = oai_code
