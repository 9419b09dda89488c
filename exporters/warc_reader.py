"""Response records out of a WARC file, on FastWARC, with the HTTP transfer/content encodings undone.

FastWARC's own auto_decode stops early on SFM's chunked+gzip streams cut mid-chunk (the v1.1 filter
stream fixture), so the payload is decoded here, leniently, the way warcio does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from fastwarc.warc import ArchiveIterator, WarcRecord, WarcRecordType

from swath.core.encodings import DECODERS, decode_checked
from swath.core.warc_files import open_warc

_WANTED = WarcRecordType.response | WarcRecordType.resource
_READABLE = _WANTED | WarcRecordType.metadata  # metadata records are read only as facts (see scan_refs)
_CUT = "{path}: record at offset {offset} is cut short; the records before it were exported"


@dataclass(slots=True)
class Response:
    """One API exchange's answer: where it came from, when it was harvested, the decoded body."""

    url: str
    date: dt.datetime  # WARC-Date of the record: the harvest date
    body: bytes
    warc: str
    offset: int
    content_type: str = ""  # the WARC Content-Type of a resource/metadata record ("" for HTTP responses)
    item_type: str | None = None  # WARC-Swath-Item-Type of swath's item records ("dataset")
    backend: str | None = None  # WARC-Swath-Backend of swath's dataset records ("oai_pmh", "ckan"...)
    status: int | None = None  # the HTTP status (None for resource/metadata records)
    unreadable: str | None = None  # why the body could not be decoded (a content coding), else None
    truncated: bool = False  # WARC-Truncated: the harvester kept only part of the body (a stream line too long)
    segment: bool = False  # WARC-Swath-Stream-Segment: a piece of a recorded stream, whose end may cut a line


@dataclass(slots=True)
class RecordRef:
    """Where a response record starts, for reading records in an order other than the file's."""

    warc: str
    offset: int
    date: dt.datetime
    fact: bool = False  # a record an export type reads before the items (see scan_refs)
    item: bool = True  # a response/resource record; False for a metadata record read only as a fact


# Called with (WARC-Target-URI, Content-Type) during the scan: True marks a record as a fact.
IsFact = Callable[[str, str], bool]


# Called with (warc path, human message) when a WARC is cut short or unreadable past some point.
OnTruncated = Callable[[str, str], None]


def dechunk(data: bytes) -> bytes:
    """Undo HTTP chunked transfer-encoding; a stream cut mid-chunk keeps what arrived."""
    out = []
    pos, end = 0, len(data)
    while pos < end:
        eol = data.find(b"\r\n", pos)
        if eol < 0:
            break
        size_field = data[pos:eol].split(b";", 1)[0].strip()
        try:
            size = int(size_field, 16)
        except ValueError:
            if pos == 0:
                return data  # not chunked after all (the header lied)
            break
        if size == 0:
            break
        out.append(data[eol + 2 : eol + 2 + size])
        pos = eol + 2 + size + 2
    return b"".join(out)


def _payload(record: WarcRecord) -> tuple[bytes, str | None]:
    """The record's body with transfer and content codings undone, and why it could not be (or None)."""
    body = record.reader.read()
    if not record.is_http:
        return body, None
    headers = record.http_headers
    te = headers.get("Transfer-Encoding") or headers.get("transfer-encoding")
    if te and "chunked" in te.lower():
        body = dechunk(body)
    ce = headers.get("Content-Encoding") or headers.get("content-encoding")
    if not ce:
        return body, None
    body, failed = decode_checked(body, ce)  # every coding the harvesters advertise (core/encodings.py)
    if failed is None:
        return body, None
    known = "does not decode" if failed in DECODERS else "is not one swath decodes"
    return body, f"its content coding {failed!r} {known} (Content-Encoding: {ce})"


def _complete(record: WarcRecord) -> bool:
    """Skip over a record's block; False if the file ended before Content-Length bytes."""
    expected = record.content_length
    return record.reader.consume() >= expected if expected else True


def _response(path: str, record: WarcRecord, on_truncated: OnTruncated) -> Response | None:
    headers = record.headers
    url = headers.get("WARC-Target-URI") or ""
    expected = record.content_length
    offset = record.stream_pos
    body, unreadable = _payload(record) if expected else (b"", None)
    # A truncated gzip WARC ends in a record whose payload is shorter than its Content-Length
    # (FastWARC even yields it empty); its bytes are not the API's answer, so drop it.
    if record.is_http and expected and record.reader.tell() < expected:
        on_truncated(path, _CUT.format(path=path, offset=offset))
        return None
    if not record.is_http and len(body) < expected:
        on_truncated(path, _CUT.format(path=path, offset=offset))
        return None
    truncated = bool(headers.get("WARC-Truncated"))
    segment = bool(headers.get("WARC-Swath-Stream-Segment"))
    if record.is_http:
        return Response(url=url, date=record.record_date, body=body, warc=path, offset=offset,
                        status=record.http_headers.status_code, unreadable=unreadable, truncated=truncated,
                        segment=segment)
    return Response(url=url, date=record.record_date, body=body, warc=path, offset=offset,
                    content_type=headers.get("Content-Type") or "", item_type=headers.get("WARC-Swath-Item-Type"),
                    backend=headers.get("WARC-Swath-Backend"), truncated=truncated, segment=segment)


def iter_responses(path: str | Path, *, on_truncated: OnTruncated) -> Iterator[Response]:
    """Every readable response/resource record of the file, in file order."""
    with open_warc(path) as fh:
        for ref in scan_refs(path, on_truncated=on_truncated):
            resp = read_at(fh, ref, on_truncated=on_truncated)
            if resp is not None:
                yield resp


_GZIP_MEMBER = b"\x1f\x8b\x08"


def scan_refs(path: str | Path, *, on_truncated: OnTruncated, is_fact: IsFact | None = None) -> list[RecordRef]:
    """Offsets and dates of the response records, without decoding payloads.

    With `is_fact`, records (metadata ones too) it marks are flagged as facts: what an export type must
    know before its items (superseding full dumps, the latest inventory), read in a pass of their own.
    A corrupt gzip member (each record is one in a .warc.gz) is skipped: scanning resumes at the next
    member that reads as a record, so the records after the damage are kept too.
    """
    path = str(path)
    refs: list[RecordRef] = []
    start = 0
    with open_warc(path) as fh:  # a local file, or an object read by ranged GETs (core/warc_files.py)
        while True:
            fh.seek(start)
            last = start - 1  # offset of the last record read whole
            try:
                for record in ArchiveIterator(fh, parse_http=False, auto_decode="none"):
                    if not _complete(record):
                        on_truncated(path, _CUT.format(path=path, offset=record.stream_pos))
                        return refs
                    last = record.stream_pos
                    if is_fact is None:
                        if record.record_type & _WANTED:
                            refs.append(RecordRef(warc=path, offset=last, date=record.record_date))
                    elif record.record_type & _READABLE:
                        headers = record.headers
                        fact = is_fact(headers.get("WARC-Target-URI") or "", headers.get("Content-Type") or "")
                        item = bool(record.record_type & _WANTED)
                        if fact or item:
                            refs.append(RecordRef(warc=path, offset=last, date=record.record_date,
                                                  fact=fact, item=item))
                return refs
            except OSError as exc:
                resume = _next_member(fh, _next_member(fh, last + 1) + 1) if path.endswith(".gz") else -1
                if resume < 0:
                    on_truncated(path, f"{path}: unreadable after offset {max(last, 0)} ({exc}); "
                                       "the records before it were exported")
                    return refs
                on_truncated(path, f"{path}: unreadable bytes after offset {max(last, 0)} ({exc}); "
                                   f"skipped to the next record at {resume}")
                start = resume


def _next_member(fh: IO[bytes], offset: int) -> int:
    """Offset of the next gzip member header at or after `offset`, or -1."""
    offset = max(offset, 0)
    fh.seek(offset)
    tail = b""
    while True:
        block = fh.read(1 << 20)
        if not block:
            return -1
        data = tail + block
        found = data.find(_GZIP_MEMBER)
        if found >= 0:
            return offset - len(tail) + found
        tail = data[-2:]
        offset += len(block)


def read_at(fh: IO[bytes], ref: RecordRef, *, on_truncated: OnTruncated) -> Response | None:
    """The response record starting at `ref.offset` of the open file `fh`."""
    fh.seek(ref.offset)
    try:
        for record in ArchiveIterator(fh, record_types=_READABLE, parse_http=True, auto_decode="none"):
            return _response(ref.warc, record, on_truncated)
    except OSError as exc:
        on_truncated(ref.warc, f"{ref.warc}: record at offset {ref.offset} unreadable ({exc})")
    return None
