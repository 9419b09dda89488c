"""WARC records of one harvest, built with warcio's builder: request/response pairs, stream segments, resource
and metadata records, with their digests computed once. Every record is redacted, given a valid target URI and
a capture time of its own here (harvesters/capture.py); harvesters/warc.py writes them to files.
"""

from __future__ import annotations

import hashlib
from io import BytesIO
from typing import TYPE_CHECKING, Any

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from swath.harvesters.capture import CaptureClock, new_record_id, safe_uri

if TYPE_CHECKING:
    from swath.harvesters.redaction import Redactor

_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_PAIRS = [a + b for a in _B32 for b in _B32]  # 10 bits -> 2 characters


def _b32_sha1(digest: bytes) -> str:
    """base64.b32encode of a 20-byte SHA-1 (160 bits: no padding), without its per-call overhead."""
    n = int.from_bytes(digest, "big")
    return "".join([_B32_PAIRS[(n >> shift) & 0x3FF] for shift in range(150, -1, -10)])


def _sha1(*parts: bytes) -> str:
    digest = hashlib.sha1()
    for part in parts:
        digest.update(part)
    return "sha1:" + _b32_sha1(digest.digest())


_EMPTY_SHA1 = _sha1(b"")  # the payload digest of most requests (GETs)


def _digests(http_headers: StatusAndHeaders, body: bytes) -> dict[str, str]:
    """Block and payload digests computed once here, so warcio does not re-read the body twice."""
    http_headers.compute_headers_buffer(None)
    payload = _sha1(body) if body else _EMPTY_SHA1
    return {"WARC-Payload-Digest": payload, "WARC-Block-Digest": _sha1(http_headers.headers_buff, body)}


REDACTED_HEADER = "WARC-Swath-Redacted"  # on a record whose payload had secrets masked: how many


# The value of a WARC-Refers-To header given to `RecordFactory.plain` that stands for the last 2xx response
# recorded before the record: the answer a derived record (a mapped dataset) was read from.
LAST_RESPONSE = "<swath:last-response>"


class RecordFactory:
    """Builds WARC records (request/response pairs, stream segments, resource/metadata) with warcio's builder.

    With a redactor, every record it builds is redacted here, the one place all of them pass: the target
    URI (userinfo, secret parameters, secrets), response headers, and the secrets in response bodies and
    resource/metadata payloads overwritten with same-length masks (docs/harvesting.md "Redaction").
    Every target URI is made valid (`safe_uri`) and every capture of a URI gets its own second
    (`CaptureClock`), so replay tools reach each one. Records are built in file order on the writer thread,
    which is what lets `LAST_RESPONSE` name the response written just before."""

    def __init__(self, *, redactor: Redactor | None = None) -> None:
        self._builder = WARCWriter(BytesIO(), gzip=True)
        self.redactor = redactor
        self.clock = CaptureClock()
        self.last_response: str | None = None  # WARC-Record-ID of the last 2xx response built

    def _uri(self, uri: str) -> str:
        return safe_uri(self.redactor.url(uri) if self.redactor is not None else uri)

    def _http_record(self, uri: str, record_type: str, http_headers: StatusAndHeaders, body: bytes,
                     headers: dict[str, str]) -> Any:
        return self._builder.create_warc_record(uri, record_type, payload=BytesIO(body), length=len(body),
                                                http_headers=http_headers,
                                                warc_headers_dict={"WARC-Record-ID": new_record_id(), **headers,
                                                                   **_digests(http_headers, body)})

    def _response(self, *, uri: str, status_line: str, response_headers: list[tuple[str, str]],
                  response_body: bytes, protocol: str, extra: dict[str, str]):
        if self.redactor is not None:
            response_headers, response_body, masked = self.redactor.response(response_headers, response_body)
            if masked:
                extra[REDACTED_HEADER] = str(masked)
        response = self._http_record(uri, "response", StatusAndHeaders(status_line, response_headers,
                                                                        protocol=protocol), response_body, extra)
        if status_line[:1] == "2":
            self.last_response = response.rec_headers.get_header("WARC-Record-ID")
        return response

    def pair(
        self,
        *,
        uri: str,
        request_line: str,
        request_headers: list[tuple[str, str]],
        request_body: bytes,
        status_line: str,
        response_headers: list[tuple[str, str]],
        response_body: bytes,
        protocol: str = "HTTP/1.1",
        extra: dict[str, str] | None = None,
        request_id: str | None = None,
    ) -> list:
        """A request and its response; `request_id` (from `new_record_id`) when later records name it."""
        extra = dict(extra or {})
        uri = self._uri(uri)
        extra["WARC-Date"] = self.clock.date(uri, extra.get("WARC-Date"))
        response = self._response(uri=uri, status_line=status_line, response_headers=response_headers,
                                  response_body=response_body, protocol=protocol, extra=extra)
        request = self._http_record(uri, "request", StatusAndHeaders(request_line, request_headers,
                                                                      is_http_request=True), request_body, {
            **({"WARC-Record-ID": request_id} if request_id else {}),
            "WARC-Concurrent-To": response.rec_headers.get_header("WARC-Record-ID"),
            "WARC-Date": response.rec_headers.get_header("WARC-Date"),
            **{k: v for k, v in extra.items() if k not in (REDACTED_HEADER, "WARC-Date")},
        })
        return [request, response]

    def segment(self, *, uri: str, request_id: str, status_line: str, response_headers: list[tuple[str, str]],
                response_body: bytes, protocol: str = "HTTP/1.1", extra: dict[str, str] | None = None,
                **_request: Any) -> list:
        """A later segment of a streamed response: the response record alone, `WARC-Concurrent-To` the
        connection's one request record (written with the first segment by `pair`)."""
        extra = dict(extra or {})
        uri = self._uri(uri)
        extra["WARC-Date"] = self.clock.date(uri, extra.get("WARC-Date"))
        extra["WARC-Concurrent-To"] = request_id
        return [self._response(uri=uri, status_line=status_line, response_headers=response_headers,
                               response_body=response_body, protocol=protocol, extra=extra)]

    def plain(self, *, uri: str, record_type: str, payload: bytes, content_type: str,
              headers: dict[str, str] | None = None):
        """A resource or metadata record; a `WARC-Refers-To: LAST_RESPONSE` header becomes the id of the
        last 2xx response built (dropped if there was none)."""
        headers = dict(headers or {})
        uri = self._uri(uri)
        if self.redactor is not None:  # a platform's own headers too (an item's URI may carry user:pass@)
            headers = {name: self.redactor.url(value) if name.endswith("-URI") else self.redactor.text(value)
                       for name, value in headers.items()}
            payload, masked = self.redactor.mask(payload)
            if masked:
                headers[REDACTED_HEADER] = str(masked)
        if headers.get("WARC-Refers-To") == LAST_RESPONSE:
            if self.last_response:
                headers["WARC-Refers-To"] = self.last_response
            else:
                del headers["WARC-Refers-To"]
        headers["WARC-Date"] = self.clock.date(uri, headers.get("WARC-Date"))
        headers["WARC-Payload-Digest"] = headers["WARC-Block-Digest"] = _sha1(payload)  # no HTTP headers: one
        headers.setdefault("WARC-Record-ID", new_record_id())
        return self._builder.create_warc_record(
            uri,
            record_type,
            payload=BytesIO(payload),
            length=len(payload),
            warc_content_type=content_type,
            warc_headers_dict=headers,
        )
