"""The log filter that redacts what any logger logs: every running harvest's secrets and, always, credentials
found by name (`install_log_filter`). Redactors join it with `LOG_FILTER.add` (harvesters/recorder.py).
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Protocol

from swath.core.masking import mask_text
from swath.harvesters.scrub import scrub


class Redactor(Protocol):
    """A harvest's redactor (harvesters/redaction.py), as the filter uses it."""

    def text(self, text: str) -> str: ...


class SecretLogFilter(logging.Filter):
    """Redacts every log record passing a handler: the secrets of every running harvest and, always,
    credentials found by name. On handlers, since a logger's filter does not see its children's records."""

    def __init__(self) -> None:
        super().__init__()
        self._redactors: weakref.WeakSet[Redactor] = weakref.WeakSet()  # a harvest never closed is not kept
        self._lock = threading.Lock()

    def add(self, redactor: Redactor) -> None:
        with self._lock:
            self._redactors.add(redactor)

    def remove(self, redactor: Redactor) -> None:
        with self._lock:
            self._redactors.discard(redactor)

    def redact(self, text: str) -> str:
        with self._lock:
            redactors = list(self._redactors)
        for redactor in redactors:
            text = redactor.text(text)
        return mask_text(scrub(text))  # URLs in any log line as every view shows them (core/masking.py)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logging's to report, not ours
            return True
        redacted = self.redact(message)
        if redacted != message:
            record.msg, record.args = redacted, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


LOG_FILTER = SecretLogFilter()
_filter_installed = threading.Lock()


def install_log_filter() -> SecretLogFilter:
    """Attach LOG_FILTER to the root logger's handlers and logging's last resort (the handlers that write
    what any logger logs); call it again after adding a handler."""
    with _filter_installed:
        for handler in [*logging.getLogger().handlers, logging.lastResort]:
            if handler is not None and LOG_FILTER not in handler.filters:
                handler.addFilter(LOG_FILTER)
    return LOG_FILTER
