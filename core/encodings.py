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


def _zlib(data: bytes, wbits: int, limit: int) -> bytes | None:
    """A zlib-family stream, at most `limit` + 1 bytes of it (0: no limit); a truncated one keeps what
    decodes, and raw deflate (sent by some servers for both names, and accepted by browsers and urllib3)
    is tried when the header does not match."""
    for bits in (wbits, -zlib.MAX_WBITS):
        try:
            return zlib.decompressobj(bits).decompress(data, limit + 1 if limit else 0)
        except zlib.error:
            continue
    return None


def _gzip(data: bytes, limit: int = 0) -> bytes | None:
    return _zlib(data, 16 + zlib.MAX_WBITS, limit)


def _deflate(data: bytes, limit: int = 0) -> bytes | None:
    return _zlib(data, zlib.MAX_WBITS, limit)


def _brotli(data: bytes, limit: int = 0) -> bytes | None:
    decoder, out, size = brotli.Decompressor(), [], 0
    try:
        for start in range(0, len(data), _CHUNK):
            piece = data[start:start + _CHUNK]
            # a limit stops one call's output at limit + 1 bytes: only ever cut from a body past the limit
            out.append(decoder.process(piece, output_buffer_limit=limit + 1) if limit else decoder.process(piece))
            size += len(out[-1])
            if limit and size > limit:
                break
    except brotli.error:
        pass  # keep what decoded before the damage, as zlib does for a cut stream
    decoded = b"".join(out)
    return decoded if decoded or not data else None  # nothing at all read as brotli: not brotli


# Content-Encoding value -> decoder (None: not that coding after all)
# (body, limit: at most limit + 1 bytes are decoded, 0 for no limit)
DECODERS: dict[str, Callable[[bytes, int], bytes | None]] = {
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


def decode_checked(body: bytes, content_encoding: str, *, limit: int = 0) -> tuple[bytes, str | None]:
    """As decode, with the coding that did not decode (None when every one did): the exporters count
    such a body as unreadable instead of guessing at its bytes. With a `limit`, a coding that decodes past
    `limit` bytes did not decode either (a bomb), and no more than limit + 1 bytes are ever decoded."""
    codings = [c.strip().lower() for c in content_encoding.split(",")]
    for coding in reversed([c for c in codings if c and c != "identity"]):
        decoder = DECODERS.get(coding)
        decoded = decoder(body, limit) if decoder is not None else None
        if decoded is None or (limit and len(decoded) > limit):
            return body, coding
        body = decoded
    return body, None


def decode_bounded(body: bytes, content_encoding: str, *, limit: int) -> bytes | None:
    """The body decoded within `limit` bytes, or None (a coding not in DECODERS, broken, or past the limit)."""
    decoded, failed = decode_checked(body, content_encoding, limit=limit)
    return None if failed else decoded
