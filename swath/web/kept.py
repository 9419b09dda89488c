"""Values kept in this process for a short while under a random token: a preview's result between its POST
and the page that shows it (Post/Redirect/Get), a form sent after its session ended until the user has logged
in again. Bounded: at most `size` values, each for `seconds`, the oldest dropped first; a restart forgets them
(the page then says to run or type it again)."""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from typing import Generic, TypeVar

T = TypeVar("T")


class Kept(Generic[T]):
    def __init__(self, *, size: int, seconds: float) -> None:
        self.size, self.seconds = size, seconds
        self._values: OrderedDict[str, tuple[float, T]] = OrderedDict()
        self._lock = threading.Lock()

    def put(self, value: T) -> str:
        """Keep `value`; the token that gets it back (unguessable: it may be the only key to it)."""
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._drop_expired()
            self._values[token] = (time.monotonic() + self.seconds, value)
            while len(self._values) > self.size:
                self._values.popitem(last=False)
        return token

    def get(self, token: str) -> T | None:
        with self._lock:
            self._drop_expired()
            found = self._values.get(token)
        return found[1] if found else None

    def take(self, token: str) -> T | None:
        """The value, forgotten: given once."""
        with self._lock:
            self._drop_expired()
            found = self._values.pop(token, None)
        return found[1] if found else None

    def _drop_expired(self) -> None:
        now = time.monotonic()
        while self._values:
            token, (until, _value) = next(iter(self._values.items()))
            if until > now:
                return
            del self._values[token]
