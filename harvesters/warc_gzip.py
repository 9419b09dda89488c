"""Gzip per record: the file-like object a WARC's records are written to, each record its own gzip member,
compressed by one deflate stream per file, or two with the C helper (whole records in batches; large ones as
they stream): every member starts after a full flush, so none refers to another stream's bytes
(`GzipMembers`). Used by harvesters/warc.py.
"""

from __future__ import annotations

import struct
import zlib
from typing import Protocol

try:  # the optional C helper (setup.py); without it the same bytes come from the zlib module, slower
    from swath.harvesters._gzmembers import Members as _CMembers
except ImportError:  # pragma: no cover - a build without a C compiler
    _CMembers = None

GZIP_LEVEL = 6  # warcio's own wrapper uses 9: ~40 % more CPU on JSON pages for ~1 % smaller files


# A gzip member as zlib writes one (no name, no time, OS 3): its header, an empty last deflate block, and its
# trailer (CRC-32 and size mod 2**32 of what it holds, little-endian).
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
_LAST_BLOCK = b"\x03\x00"  # BFINAL=1, fixed Huffman codes, end-of-block: nothing more in this member
_TRAILER = struct.Struct("<II")


class _Batch(Protocol):
    def compress(self, records: list[bytes]) -> bytes: ...


class GzipMembers:
    """The file-like records are written to: each record its own gzip member (warcio flushes once at the end of
    every record), compressed as it comes (no uncompressed copy of a large record).

    One raw deflate stream serves every member of the file: a record ends with a full flush (which resets the
    stream's history, so no member refers to another's bytes) and an empty last block, between a gzip header
    and trailer made here. A new compressor per record allocates zlib's ~260 KB of window and tables each
    time: as cheap as compressing a 1 KB record in one process, five times that in another (64 against 13 µs),
    depending on whether the allocator hands back memory it already has.

    Records given whole (`member`, up to JOIN_BELOW) wait for `take` and are compressed together by the C
    helper (harvesters/_gzmembers.c), which lets go of the GIL once for them all: the zlib module lets go of it
    twice a record, and the WARC writer then waited twice a record for the harvest's other thread to give it
    back (OAI-PMH: 0.41 of Sickle on an idle machine). Same calls on the stream, so the same bytes."""

    JOIN_BELOW = 1 << 16  # a record given whole up to this size is joined first: one call to compress it

    def __init__(self, *, batched: bool = True) -> None:
        self._parts: list[bytes] = []
        self._compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, -zlib.MAX_WBITS)
        self._batch: _Batch | None = _CMembers(GZIP_LEVEL) if batched and _CMembers is not None else None
        self._waiting: list[bytes] = []  # whole records for the batch, in order
        self._crc = 0
        self._size = -1  # bytes in the member being written; -1: none begun

    def write(self, data: bytes) -> int:
        self._compress_waiting()
        if self._size < 0:
            self._parts.append(_GZIP_HEADER)
            self._crc = self._size = 0
        self._parts.append(self._compressor.compress(data))
        self._crc = zlib.crc32(data, self._crc)
        self._size += len(data)
        return len(data)

    def flush(self) -> None:
        """End the member being written, if any (records waiting for the batch went first: `write`)."""
        if self._size >= 0:
            self._parts += [self._compressor.flush(zlib.Z_FULL_FLUSH), _LAST_BLOCK,
                            _TRAILER.pack(self._crc, self._size & 0xFFFFFFFF)]
            self._size = -1

    def member(self, *parts: bytes) -> None:
        """One record given whole, as one member."""
        self.flush()
        if sum(map(len, parts)) > self.JOIN_BELOW:
            for part in parts:
                self.write(part)
            self.flush()
        elif self._batch is not None:
            self._waiting.append(b"".join(parts))
        else:
            self.write(b"".join(parts))
            self.flush()

    def take(self) -> bytes:
        """The members written since the last take()."""
        self._compress_waiting()
        data, self._parts = b"".join(self._parts), []
        return data

    def _compress_waiting(self) -> None:
        if self._waiting and self._batch is not None:
            waiting, self._waiting = self._waiting, []
            self._parts.append(self._batch.compress(waiting))
