"""What a capture is called and when: WARC-Dates, a capture time of its own for each capture of a URI,
valid target URIs, record ids made ahead. Used by the record factory (warc.py) and the stream tap (streams.py);
see docs/harvesting.md "WARC files".
"""

from __future__ import annotations

import calendar
import random
import re
import threading
import time
from collections import OrderedDict
from urllib.parse import quote, quote_plus

_last_date: tuple[int, str] = (0, "")


def warc_date() -> str:
    """The WARC-Date of an exchange, taken when it happened rather than when it is written."""
    global _last_date
    second = int(time.time())
    if _last_date[0] != second:  # WARC/1.0 dates are whole seconds: format once per second
        _last_date = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return _last_date[1]


_parsed: tuple[str, int] = ("", 0)


def _date_second(date: str) -> int:
    """Epoch second of a WARC/1.0 date (`%Y-%m-%dT%H:%M:%SZ`); dates come a second at a time: parse once."""
    global _parsed
    if _parsed[0] != date:
        _parsed = (date, calendar.timegm(time.strptime(date, "%Y-%m-%dT%H:%M:%SZ")))
    return _parsed[1]


_formatted: tuple[int, str] = (-1, "")


def _format_date(second: int) -> str:
    """A WARC/1.0 date; captures come many a second: formatted once per second."""
    global _formatted
    last = _formatted  # one read: another thread may replace it
    if last[0] != second:
        last = _formatted = (second, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(second)))
    return last[1]


class CaptureClock:
    """Distinct capture times for distinct captures of one URI within a harvest.

    Replay tools (pywb, cdxj-indexer, ReplayWeb.page) find a capture by URI and 14-digit timestamp, so two
    captures of one URI in the same second hide one another. A capture whose second an earlier capture of
    the same URI already holds is dated at the next free second (docs/harvesting.md "WARC files")."""

    PRUNE_AT = 4096  # URIs remembered before the old ones are dropped
    KEEP_SECONDS = 120  # a URI last captured this long before the newest capture cannot collide again

    def __init__(self) -> None:
        self._last: OrderedDict[str, int] = OrderedDict()  # least recently captured first
        self._newest = 0
        self._lock = threading.Lock()

    def date(self, uri: str, date: str | None = None) -> str:
        """The WARC-Date for a capture of `uri` that happened at `date` (now if None)."""
        second = _date_second(date) if date else int(time.time())
        with self._lock:
            last = self._last
            taken = last.get(uri)
            if taken is not None:
                second = max(second, taken + 1)
                last.move_to_end(uri)
            last[uri] = second
            self._newest = horizon = max(self._newest, second)
            horizon -= self.KEEP_SECONDS
            # drop from the old end only: each URI is dropped at most once per capture, O(1) amortised
            while len(last) > self.PRUNE_AT:
                oldest_uri = next(iter(last))
                if last[oldest_uri] >= horizon:
                    break
                del last[oldest_uri]
        return date if date and _date_second(date) == second else _format_date(second)


# RFC 3986: unreserved, reserved (gen-delims and sub-delims) and the percent sign of an escape
_URI_SAFE = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?#[]@!$&'()*+,;=")
_HEX_BYTES = frozenset(bytes([h]) for h in b"0123456789ABCDEFabcdef")
_URI_RUN = r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]*"
# runs of allowed characters between %XX escapes: the same language as (?:[allowed]|%XX)*, 4-10x faster to match
_VALID_URI = re.compile(_URI_RUN + r"(?:%[0-9A-Fa-f]{2}" + _URI_RUN + r")*")


def safe_uri(uri: str) -> str:
    """`uri` with every character RFC 3986 forbids percent-encoded (UTF-8); a valid URI is returned as is.

    A space, a non-ASCII letter (an IRI) or a `%` not starting an escape would make WARC-Target-URI
    invalid; replay tools then index a URI no browser asks for."""
    if _VALID_URI.fullmatch(uri):
        return uri
    data = uri.encode("utf-8")
    out = []
    for i, b in enumerate(data):
        if b in _URI_SAFE or (b == 0x25 and data[i + 1 : i + 2] in _HEX_BYTES and data[i + 2 : i + 3] in _HEX_BYTES):
            out.append(chr(b))
        else:
            out.append(f"%{b:02X}")
    return "".join(out)


# what quote(text, safe="") and quote_plus(text) give for ASCII text, character by character: quote's per-byte
# loop was a tenth of an item's cost (an item's record URI and its OAI GetRecord URI are quoted per item), and
# str.translate to 3-character strings goes through its slow path (a dict.get per character is faster)
_QUOTED = {chr(c): f"%{c:02X}" for c in range(128) if not (chr(c).isalnum() or chr(c) in "_.-~")}
_QUOTED_PLUS = {**_QUOTED, " ": "+"}


def quote_part(text: str, *, plus: bool = False) -> str:
    """`text` as one component of a URI: quote(text, safe=""), or quote_plus(text) when `plus`."""
    if not text.isascii():
        return quote_plus(text) if plus else quote(text, safe="")
    return "".join(map((_QUOTED_PLUS if plus else _QUOTED).get, text, text))


def new_record_id() -> str:
    """A WARC-Record-ID (a random UUID), made before the record when another record must name it first.
    From `random`, seeded from os.urandom and reseeded in a forked child: uuid4 reads os.urandom for each,
    which lets go of the GIL and waits to get it back behind the harvest's other threads."""
    n = random.getrandbits(128) & _UUID4_CLEAR | _UUID4_SET
    h = f"{n:032x}"
    return f"<urn:uuid:{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}>"


# what uuid.UUID(int=n, version=4) does to n, without building the object: the version and variant bits
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID4_SET = (4 << 76) | (0x8000 << 48)
