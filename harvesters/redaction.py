"""Redaction: credentials out of recorded requests and responses, URLs, log lines and messages.

One `Redactor` per harvest knows every secret it holds: the start message's credentials that authenticate
(not the login names its platform declares: a handle or user name is public data), the password of any
`user:pass@` in its seed tokens, and those learnt during it (`add`: an obtained token, a
cookie the server set). Each secret is looked for in every spelling text may carry it in (`forms_of`).
Free text is also scrubbed by name (harvesters/scrub.py `scrub`: `api_key=…`, `"password": "…"`,
`Authorization: …`, userinfo in URLs), whatever the value. `install_log_filter()` (harvesters/log_redaction.py)
puts the running harvests' redactors on the process's log handlers, so every record that reaches output is
redacted, whichever logger it came from.
See docs/harvesting.md "Redaction".
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

from swath.core import discovery
from swath.core.encodings import decode_bounded
from swath.core.masking import SECRET_PARAMS as SECRET_PARAMS  # re-exported: harvesters/guard.py takes it here
from swath.core.masking import secret_params_out
from swath.harvesters.log_redaction import LOG_FILTER as LOG_FILTER  # re-exported, as before the split
from swath.harvesters.log_redaction import SecretLogFilter as SecretLogFilter
from swath.harvesters.log_redaction import install_log_filter as install_log_filter
from swath.harvesters.scrub import REDACTED as REDACTED  # re-exported: callers take these from here
from swath.harvesters.scrub import names_in, userinfo_in
from swath.harvesters.scrub import scrub as scrub

if TYPE_CHECKING:
    from swath.messages.model import HarvestStart

MASK = b"*"  # recorded bodies keep their length: a secret becomes as many asterisks
# Values this long are replaced wherever they occur. Shorter ones only as a whole token (no letter or digit
# either side), since as substrings they would garble ordinary text; in a header value, parameter value or
# userinfo they are a whole token anyway, so there they always go.
MIN_ANYWHERE = 4
MEMO_CHARS, MEMO_SIZE = 200, 4096  # texts this short are remembered redacted, this many at most
MAX_SECRETS = 512  # a server setting a new cookie on every answer must not make redaction ever slower
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token"})
# response headers that carry URLs a server may have put a credential in
URL_HEADERS = frozenset({"location", "content-location"})

def forms_of(value: str) -> set[str]:
    """The spellings a secret may take in text: as is, JSON-escaped, URL-encoded once (quote, quote_plus)
    and twice (oauthlib's signature base string), and base64 (standard and URL-safe; for a value of 6+
    bytes also the part of it that shows inside a longer base64 text at each of the 3 alignments)."""
    once = {value, quote(value, safe=""), quote(value), quote_plus(value), json.dumps(value)[1:-1],
            value.replace("/", "\\/")}
    forms = once | {quote(f, safe="") for f in once} | {quote_plus(f) for f in once}
    raw = value.encode("utf-8")
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        full = encode(raw).decode("ascii")
        forms |= {full, full.rstrip("=")}
        if len(raw) >= 6:
            for k in range(3):  # the characters that depend on the value's bits only, after k bytes
                start, end = -(-8 * k // 6), 8 * (k + len(raw)) // 6
                forms.add(encode(b"\0" * k + raw + b"\0\0").decode("ascii")[start:end])
    return {f for f in forms if f}


def basic_forms(user: str, password: str) -> set[str]:
    """`Authorization: Basic` carries base64 of `user:password`."""
    full = base64.b64encode(f"{user}:{password}".encode()).decode("ascii")
    return {full, full.rstrip("=")}


def flatten(value: Any) -> Iterator[str]:
    """The strings and numbers in a credential value (credentials may be nested objects)."""
    if isinstance(value, dict):
        for item in value.values():
            yield from flatten(item)
    elif isinstance(value, (list, tuple, set)):
        for item in value:
            yield from flatten(item)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield str(value)


def _innermost(forms: list[str]) -> list[str]:
    """The forms that contain no other form (any text holding a form holds one of these)."""
    if len(forms) > 1000:  # quadratic below; only a harvest that learnt hundreds of cookies gets here
        return forms
    kept: list[str] = []
    for form in sorted(forms, key=len):
        if not any(other in form for other in kept):
            kept.append(form)
    return kept


class _Patterns:
    """The compiled alternations of one set of secrets (rebuilt when a secret is added)."""

    def __init__(self, long: set[str], short: set[str]) -> None:
        self.long = sorted(long, key=len, reverse=True)
        self.short = sorted(short - long, key=len, reverse=True)
        everything = self._alternation(self.long, self.short)
        self.text = re.compile(everything) if everything else None
        self.data = re.compile(everything.encode("utf-8")) if everything else None
        self.mask = re.compile(self._alternation(self.long, []).encode("utf-8")) if self.long else None
        # the quick `in` scans before a regex runs: a form holding another form needs no scan of its own
        long_inner = _innermost(self.long)
        self.all_text = long_inner + _innermost(self.short)
        self.long_bytes = [f.encode("utf-8") for f in long_inner]
        self.all_bytes = [f.encode("utf-8") for f in self.all_text]
        self.memo: dict[str, str] = {}  # short texts already redacted with these secrets (fixed record headers)

    @staticmethod
    def _alternation(long: list[str], short: list[str]) -> str:
        parts = [re.escape(f) for f in long]
        if short:
            parts.append(r"(?<![A-Za-z0-9])(?:" + "|".join(re.escape(f) for f in short) + r")(?![A-Za-z0-9])")
        return "|".join(parts)


class Redactor:
    """Removes credentials from recorded requests and responses, URLs, log lines and messages."""

    def __init__(self, secrets: Iterable[Any] = (), *, max_decoded: int = 100 * 1024 * 1024) -> None:
        self.max_decoded = max_decoded  # a compressed body is looked into only up to this many bytes
        self._values: set[str] = set()
        self._long: set[str] = set()
        self._short: set[str] = set()
        self._lock = threading.Lock()
        self._patterns: _Patterns | None = _Patterns(set(), set())
        self.add(*secrets)

    def add(self, *secrets: Any) -> None:
        """Redact these values too from now on (e.g. a session token learnt during the harvest)."""
        with self._lock:
            for value in flatten(list(secrets)):
                if not value or value in self._values or len(self._values) >= MAX_SECRETS:
                    continue
                self._values.add(value)
                (self._long if len(value) >= MIN_ANYWHERE else self._short).update(forms_of(value))
            self._patterns = None  # compiled on next use: a burst of adds compiles once

    def add_basic(self, user: str, password: str) -> None:
        """Also redact the Basic-auth encoding of this pair."""
        with self._lock:
            self._long.update(basic_forms(user, password))
            self._patterns = None

    @property
    def _compiled(self) -> _Patterns:
        patterns = self._patterns
        if patterns is None:
            with self._lock:
                patterns = self._patterns = self._patterns or _Patterns(self._long, self._short)
        return patterns

    # --- free text: REDACTED replaces a secret ---
    def text(self, text: str) -> str:
        patterns = self._compiled
        done = patterns.memo.get(text)
        if done is not None:
            return done
        redacted = text
        if patterns.text is not None and any(form in text for form in patterns.all_text):
            redacted = patterns.text.sub(REDACTED, text)
        redacted = scrub(redacted)
        if len(text) <= MEMO_CHARS:
            if len(patterns.memo) >= MEMO_SIZE:
                patterns.memo.clear()  # bounded: an endless run of distinct values starts it afresh
            patterns.memo[text] = redacted
        return redacted

    def data(self, data: bytes) -> bytes:
        patterns = self._compiled
        if patterns.data is not None and any(form in data for form in patterns.all_bytes):
            data = patterns.data.sub(REDACTED.encode(), data)
        return data

    def params(self, encoded: str) -> str:
        """Redact `a=b&c=d` keeping every other byte of the encoding as it was."""
        return self.text(secret_params_out(encoded, REDACTED))

    def url(self, url: str) -> str:
        if "@" not in url and ("=" not in url or not names_in(url)):  # no userinfo, no secret parameter
            return self.text(url)
        split = urlsplit(url)
        query = secret_params_out(split.query, REDACTED)
        if "@" in split.netloc or query != split.query:
            url = urlunsplit(split._replace(netloc=split.netloc.rpartition("@")[2], query=query))
        return self.text(url)

    def fields(self, fields: dict[str, str]) -> dict[str, str]:
        """A record's own WARC headers (a platform's: an item's id, its URI): `url` for a `-URI` one, `text`
        for the rest. Looked at as one text first: most hold nothing to redact, and then are returned as is."""
        joined = "\n".join(fields.values())
        patterns = self._compiled
        if "@" not in joined and not any(form in joined for form in patterns.all_text) and not names_in(joined):
            return fields
        return {name: self.url(value) if name.endswith("-URI") else self.text(value) for name, value in fields.items()}

    def headers(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        out = []
        for name, value in items:
            lower = name.lower()
            if lower in SECRET_HEADERS:
                scheme = value.split(" ", 1)[0] if " " in value and lower.endswith("authorization") else ""
                value = f"{scheme} {REDACTED}".strip()
            elif lower == "set-cookie":
                value = redact_set_cookie(value)
            out.append((name, self.text(value)))
        return out

    def body(self, body: bytes, content_type: str) -> bytes:
        """A request body: secret parameters of a form, JSON keys and headers by name, and every secret."""
        if "application/x-www-form-urlencoded" in content_type.lower():
            body = self.params(body.decode("latin-1")).encode("latin-1")
        return scrub(self.data(body).decode("latin-1")).encode("latin-1")

    # --- recorded responses: a same-length mask, so offsets and lengths keep their meaning ---
    def mask(self, data: bytes) -> tuple[bytes, int]:
        """Every secret of 4+ characters in `data` overwritten with asterisks; returns (data, how many)."""
        patterns = self._compiled
        if patterns.mask is None or not any(form in data for form in patterns.long_bytes):
            return data, 0
        count = 0

        def overwrite(match: re.Match[bytes]) -> bytes:
            nonlocal count
            count += 1
            return MASK * len(match.group())

        return patterns.mask.sub(overwrite, data), count

    def response_headers(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        """A recorded response's headers: Set-Cookie values, secret parameters in the URLs of Location,
        Content-Location, Link and Refresh (the URL otherwise intact, for replay) and every secret."""
        out = []
        for name, value in items:
            lower = name.lower()
            if lower == "set-cookie":
                value = redact_set_cookie(value)
            elif lower in URL_HEADERS:
                value = self.url(value)
            elif lower == "link":
                value = re.sub(r"<([^>]*)>", lambda m: f"<{self.url(m.group(1))}>", value)
            elif lower == "refresh":
                value = re.sub(r"(?i)(url\s*=\s*['\"]?)([^'\"]*)", lambda m: m.group(1) + self.url(m.group(2)), value)
            out.append((name, self.text(value)))
        return out

    def response(self, headers: list[tuple[str, str]],
                 body: bytes) -> tuple[list[tuple[str, str]], bytes, int]:
        """(headers, body, secrets masked) of a recorded response. A compressed body holding a secret is
        stored decoded and masked, its Content-Encoding and Content-Length kept as X-Archive-Orig-*."""
        headers = self.response_headers(headers)
        coding = next((v for n, v in headers if n.lower() == "content-encoding"), "identity").strip().lower()
        if coding in ("", "identity"):
            body, count = self.mask(body)
            return headers, body, count
        decoded = decode_bounded(body, coding, limit=self.max_decoded)
        if decoded is None:
            return headers, body, 0  # not decodable within the limit: stored as sent (docs/harvesting.md)
        masked, count = self.mask(decoded)
        if not count:
            return headers, body, 0
        renamed = {"content-encoding", "content-length", "transfer-encoding"}
        return [(f"X-Archive-Orig-{n}" if n.lower() in renamed else n, v) for n, v in headers], masked, count


def harvest_redactor(start: HarvestStart, *, max_decoded: int) -> Redactor:
    """The redactor of one harvest. Only what authenticates is a secret (docs/security.md "What is a secret"):
    every credential value but the login names its platform declares (`Platform.login_names`; a harvest type
    without a declaration has none), the Basic-auth encoding of any credential with a secret one, and the
    password of every `user:pass@` in a credential or a seed token (OAI-PMH, CKAN, DCAT URLs), or its user
    when it has no password (then the user is the token)."""
    platform = discovery.owner(start.type, lambda p: p.harvest_methods)
    secret = platform.secret_credentials(start.credentials) if platform is not None else start.credentials
    values = [value for value in flatten(start.credentials) if value]
    secrets = [value for value in flatten(secret) if value]
    redactor = Redactor(secrets, max_decoded=max_decoded)
    for user in values:
        for password in secrets:
            if user != password:
                redactor.add_basic(user, password)
    for text in [*values, *flatten([seed.token for seed in start.seeds])]:
        for user, password in userinfo_in(text):
            redactor.add(password or user)
            redactor.add_basic(user, password)
    return redactor


def redact_set_cookie(value: str) -> str:
    """`name=value; attributes` -> `name=REDACTED; attributes`: a cookie the server sets may be a session."""
    pair, sep, attributes = value.partition(";")
    name, eq, cookie = pair.partition("=")
    return f"{name}={REDACTED}{sep}{attributes}" if eq and cookie.strip() else value


def set_cookie_value(value: str) -> str:
    """The value of a Set-Cookie header's cookie (`name=value; attributes`)."""
    return value.partition(";")[0].partition("=")[2].strip().strip('"')
