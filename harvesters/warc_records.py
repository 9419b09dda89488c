"""WARC records of one harvest: request/response pairs, stream segments, resource and metadata records, with their
digests computed once and their WARC headers formatted once, as warcio's builder and writer would give them
(`PreparedRecord`). Every record is redacted, given a valid target URI and a capture time of its own here
(harvesters/capture.py); harvesters/warc.py writes them to files.
"""

from __future__ import annotations

import hashlib
from io import BytesIO
from typing import TYPE_CHECKING, Any

from warcio.recordloader import ArcWarcRecord
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from swath.harvesters.capture import CaptureClock, new_record_id, safe_uri

if TYPE_CHECKING:
    from swath.harvesters.redaction import Redactor

_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_PAIRS = [a + b for a in _B32 for b in _B32]  # 10 bits -> 2 characters


def _b32_sha1(digest: bytes, p: list[str] = _B32_PAIRS) -> str:
    """base64.b32encode of a 20-byte SHA-1 (160 bits: no padding), without its per-call overhead: two 80-bit
    halves (small ints shift faster), 10 bits a lookup, unrolled."""
    n = int.from_bytes(digest, "big")
    a, b = n >> 80, n & 0xFFFFFFFFFFFFFFFFFFFF
    return (p[a >> 70] + p[(a >> 60) & 1023] + p[(a >> 50) & 1023] + p[(a >> 40) & 1023] + p[(a >> 30) & 1023]
            + p[(a >> 20) & 1023] + p[(a >> 10) & 1023] + p[a & 1023] + p[b >> 70] + p[(b >> 60) & 1023]
            + p[(b >> 50) & 1023] + p[(b >> 40) & 1023] + p[(b >> 30) & 1023] + p[(b >> 20) & 1023]
            + p[(b >> 10) & 1023] + p[b & 1023])


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


# The headers warcio's builder and writer put after the caller's (replacing one of the same name in place);
# a record given one of them is built by warcio itself, so its bytes stay warcio's.
_PLACED = frozenset({"warc-type", "warc-target-uri", "content-type", "content-length"})
_HTTP_TYPES = {"response": "application/http; msgtype=response", "request": "application/http; msgtype=request"}


class PreparedRecord(ArcWarcRecord):
    """A WARC record whose bytes are made once, here: `head` (the WARC headers in the order and spelling warcio's
    builder and writer give them, then the HTTP headers) and `payload`; the WARC writer (harvesters/warc.py)
    writes `head + payload + CRLF CRLF` without warcio's per-record header round trips. It is still a warcio
    record: warcio's writer writes the same bytes from it, and `rec_headers` is made on first use. Not to be
    changed once made."""

    def __init__(self, *, rec_type: str, uri: str, warc_headers: dict[str, str], content_type: str,
                 payload: bytes, http_headers: StatusAndHeaders | None = None) -> None:
        http_head = http_headers.headers_buff or b"" if http_headers is not None else b""
        self._warc_headers = [*warc_headers.items(), ("WARC-Type", rec_type), ("WARC-Target-URI", uri),
                              ("Content-Type", content_type),
                              ("Content-Length", str(len(http_head) + len(payload)))]
        self.head = ("WARC/1.0\r\n" + "".join([f"{name}: {value}\r\n" for name, value in self._warc_headers])
                     + "\r\n").encode("utf-8") + http_head
        self.payload = payload
        self.record_id = warc_headers["WARC-Record-ID"]
        self.warc_date = warc_headers["WARC-Date"]
        # what warcio's ArcWarcRecord holds, for warcio's writer and for readers of the record object
        self.format, self.rec_type, self.http_headers, self.content_type = "warc", rec_type, http_headers, content_type
        self.raw_stream, self.length = BytesIO(payload), len(payload)
        self.payload_length, self.digest_checker = len(payload), None
        self._rec_headers: StatusAndHeaders | None = None

    @property
    def rec_headers(self) -> StatusAndHeaders:
        if self._rec_headers is None:
            self._rec_headers = StatusAndHeaders("", list(self._warc_headers), protocol="WARC/1.0")
        return self._rec_headers

    @rec_headers.setter
    def rec_headers(self, value: StatusAndHeaders) -> None:
        self._rec_headers = value


def _preparable(uri: str, headers: dict[str, str]) -> bool:
    """Whether warcio would write these headers as given, then its own in the plain order `PreparedRecord`
    writes: a target URI, a record id and date given, none of warcio's own headers given by the caller."""
    return (bool(uri) and "WARC-Record-ID" in headers and "WARC-Date" in headers
            and _PLACED.isdisjoint([name.lower() for name in headers]))


REDACTED_HEADER = "WARC-Swath-Redacted"  # on a record whose payload had secrets masked: how many


# The value of a WARC-Refers-To header given to `RecordFactory.plain` that stands for the last 2xx response
# recorded before the record: the answer a derived record (a mapped dataset) was read from.
LAST_RESPONSE = "<swath:last-response>"


class RecordFactory:
    """Builds WARC records (request/response pairs, stream segments, resource/metadata) as `PreparedRecord`s
    (with warcio's builder when a caller gives one of the headers warcio places itself).

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
        warc_headers = {"WARC-Record-ID": new_record_id(), **headers, **_digests(http_headers, body)}
        if _preparable(uri, warc_headers):
            return PreparedRecord(rec_type=record_type, uri=uri, warc_headers=warc_headers, payload=body,
                                  content_type=_HTTP_TYPES[record_type], http_headers=http_headers)
        return self._builder.create_warc_record(uri, record_type, payload=BytesIO(body), length=len(body),
                                                http_headers=http_headers, warc_headers_dict=warc_headers)

    def _response(self, *, uri: str, status_line: str, response_headers: list[tuple[str, str]],
                  response_body: bytes, protocol: str, extra: dict[str, str]):
        if self.redactor is not None:
            response_headers, response_body, masked = self.redactor.response(response_headers, response_body)
            if masked:
                extra[REDACTED_HEADER] = str(masked)
        response = self._http_record(uri, "response", StatusAndHeaders(status_line, response_headers,
                                                                        protocol=protocol), response_body, extra)
        if status_line[:1] == "2":
            self.last_response = _record_id(response)
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
            "WARC-Concurrent-To": _record_id(response),
            "WARC-Date": extra["WARC-Date"],
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
            headers = self.redactor.fields(headers)
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
        if content_type and _preparable(uri, headers):
            return PreparedRecord(rec_type=record_type, uri=uri, warc_headers=headers, content_type=content_type,
                                  payload=payload)
        return self._builder.create_warc_record(
            uri,
            record_type,
            payload=BytesIO(payload),
            length=len(payload),
            warc_content_type=content_type,
            warc_headers_dict=headers,
        )


def _record_id(record: Any) -> str:
    return record.record_id if isinstance(record, PreparedRecord) else record.rec_headers.get_header("WARC-Record-ID")
