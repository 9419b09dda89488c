"""HTTP content codings, in one table: what the harvesters advertise and what the WARC readers undo.

A response is stored in the WARC as the server sent it (Content-Encoding kept), so every coding a
harvester's Accept-Encoding offers must be one the exporters can decode. Left to itself, requests offers
whatever urllib3 finds installed (`br` once brotli is present, `zstd` once zstandard is): so the offer is
pinned here, to the codings of DECODERS.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

import brotli

_CHUNK = 1 << 16  # brotli input per step, so a corrupt tail keeps what decoded before it


def _zlib(data: bytes, wbits: int) -> bytes | None:
    """A zlib-family stream; a truncated one keeps what decodes, and raw deflate (sent by some servers
    for both names, and accepted by browsers and urllib3) is tried when the header does not match."""
    for bits in (wbits, -zlib.MAX_WBITS):
        try:
            return zlib.decompressobj(bits).decompress(data)
        except zlib.error:
            continue
    return None


def _gzip(data: bytes) -> bytes | None:
    return _zlib(data, 16 + zlib.MAX_WBITS)


def _deflate(data: bytes) -> bytes | None:
    return _zlib(data, zlib.MAX_WBITS)


def _brotli(data: bytes) -> bytes | None:
    decoder, out = brotli.Decompressor(), []
    try:
        for start in range(0, len(data), _CHUNK):
            out.append(decoder.process(data[start:start + _CHUNK]))
    except brotli.error:
        pass  # keep what decoded before the damage, as zlib does for a cut stream
    decoded = b"".join(out)
    return decoded if decoded or not data else None  # nothing at all read as brotli: not brotli


# Content-Encoding value -> decoder (None: not that coding after all)
DECODERS: dict[str, Callable[[bytes], bytes | None]] = {
    "gzip": _gzip,
    "x-gzip": _gzip,  # the old name of gzip (RFC 9110 8.4.1.3)
    "deflate": _deflate,
    "br": _brotli,
}

# The codings the harvesters offer, each one DECODERS undoes (x-gzip is only an alias of gzip).
ADVERTISED = ("gzip", "deflate", "br")
ACCEPT_ENCODING = ", ".join(ADVERTISED)


def decode(body: bytes, content_encoding: str) -> bytes:
    """Undo a Content-Encoding header's codings (last applied first). A coding that does not decode, or one
    not in DECODERS, leaves the body as it is from there on (decode_checked says which)."""
    return decode_checked(body, content_encoding)[0]


def decode_checked(body: bytes, content_encoding: str) -> tuple[bytes, str | None]:
    """As decode, with the coding that did not decode (None when every one did): the exporters count
    such a body as unreadable instead of guessing at its bytes."""
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        decoder = DECODERS.get(coding)
        decoded = decoder(body) if decoder is not None else None
        if decoded is None:
            return body, coding
        body = decoded
    return body, None
