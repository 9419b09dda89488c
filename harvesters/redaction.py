"""Redaction: credentials out of recorded requests, URLs, Set-Cookie values, log lines and messages.

One `Redactor` per harvest knows its secrets (the start message's credentials and those learnt during it);
`install_log_filter()` puts the running harvests' redactors in front of the third-party loggers that print
request URLs, parameters or signatures.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote, quote_plus, unquote_plus, urlsplit, urlunsplit

REDACTED = "REDACTED"
# query/form parameters whose value is a credential whatever it is
SECRET_PARAMS = frozenset({
    "access_token", "access_token_secret", "api_key", "api_secret", "api_sig", "apikey", "auth_token",
    "bearer_token", "client_secret", "consumer_key", "consumer_secret", "key", "password", "secret",
})
SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "cookie", "x-api-key", "x-auth-token"})


class Redactor:
    """Removes credentials from recorded requests, URLs, log lines and messages."""

    def __init__(self, secrets: Iterable[Any] = ()) -> None:
        self._values: set[str] = set()
        self._forms: list[str] = []
        self._bytes: list[bytes] = []
        self.add(*secrets)

    def add(self, *secrets: Any) -> None:
        """Redact these values too from now on (e.g. a session token learnt during the harvest)."""
        values = {str(s) for s in secrets if isinstance(s, (str, int, float)) and not isinstance(s, bool)}
        values = self._values | {v for v in values if len(v) >= 4}  # shorter values would redact ordinary text
        forms = set(values) | {quote(v, safe="") for v in values} | {quote_plus(v) for v in values}
        ordered = sorted(forms, key=len, reverse=True)
        self._values, self._forms, self._bytes = values, ordered, [f.encode("utf-8") for f in ordered]

    def text(self, text: str) -> str:
        for form in self._forms:
            text = text.replace(form, REDACTED)
        return text

    def data(self, data: bytes) -> bytes:
        for form in self._bytes:
            data = data.replace(form, REDACTED.encode())
        return data

    def params(self, encoded: str) -> str:
        """Redact `a=b&c=d` keeping every other byte of the encoding as it was."""
        parts = []
        for part in encoded.split("&"):
            name, sep, _ = part.partition("=")
            plain = unquote_plus(name).lower()
            if sep and (plain in SECRET_PARAMS or plain.startswith("oauth_")):
                part = f"{name}={REDACTED}"
            parts.append(part)
        return self.text("&".join(parts))

    def url(self, url: str) -> str:
        split = urlsplit(url)
        netloc = split.netloc.rpartition("@")[2] if "@" in split.netloc else split.netloc
        return self.text(urlunsplit(split._replace(netloc=netloc, query=self.params(split.query))))

    def headers(self, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
        out = []
        for name, value in items:
            if name.lower() in SECRET_HEADERS:
                scheme = value.split(" ", 1)[0] if " " in value and name.lower().endswith("authorization") else ""
                value = f"{scheme} {REDACTED}".strip()
            out.append((name, self.text(value)))
        return out

    def body(self, body: bytes, content_type: str) -> bytes:
        if "application/x-www-form-urlencoded" in content_type.lower():
            body = self.params(body.decode("latin-1")).encode("latin-1")
        return self.data(body)


# third-party loggers known to print request URLs, params or signatures at DEBUG
CHATTY_LOGGERS = ("urllib3.connectionpool", "requests_oauthlib.oauth1_auth", "oauthlib.oauth1.rfc5849",
                  "oauthlib.oauth1.rfc5849.signature", "flickrapi.core", "twarc", "twarc.client2",
                  "twarc.decorators2")


class SecretLogFilter(logging.Filter):
    """Redacts the secrets of every running harvest from other libraries' log records."""

    def __init__(self) -> None:
        super().__init__()
        self._redactors: list[Redactor] = []
        self._lock = threading.Lock()

    def add(self, redactor: Redactor) -> None:
        with self._lock:
            self._redactors.append(redactor)

    def remove(self, redactor: Redactor) -> None:
        with self._lock:
            if redactor in self._redactors:
                self._redactors.remove(redactor)

    def filter(self, record: logging.LogRecord) -> bool:
        with self._lock:
            redactors = list(self._redactors)
        if redactors:
            text = record.getMessage()
            for redactor in redactors:
                text = redactor.text(text)
            record.msg, record.args = text, None
        return True


LOG_FILTER = SecretLogFilter()
_filter_installed = threading.Lock()


def install_log_filter() -> SecretLogFilter:
    """Attach LOG_FILTER to the chatty loggers once (filters do not propagate to child loggers)."""
    with _filter_installed:
        for name in CHATTY_LOGGERS:
            logger = logging.getLogger(name)
            if LOG_FILTER not in logger.filters:
                logger.addFilter(LOG_FILTER)
    return LOG_FILTER


def redact_set_cookie(value: str) -> str:
    """`name=value; attributes` -> `name=REDACTED; attributes`: a cookie the server sets may be a session."""
    pair, sep, attributes = value.partition(";")
    name, eq, cookie = pair.partition("=")
    return f"{name}={REDACTED}{sep}{attributes}" if eq and cookie.strip() else value
