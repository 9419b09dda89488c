"""What one harvest has to report and where it has got to: counts per day, notes, token updates, uids,
rate-limit waits and checkpoints.

One lock covers all of it, so a checkpoint and the items counted on the way to it change in one step and
a snapshot (`journal()` for the resume journal, `view()` for a status) never sees half of one. The
recorder (harvesters/recorder.py) journals it at each WARC close and restores it on resume; the run
(harvesters/run.py) builds statuses from `view()` (harvesters/outcome.py `harvest_status`).
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from swath.core.jsontypes import JSONable
from swath.harvesters.values import as_text, kind_of
from swath.messages import codes
from swath.messages.model import Note


class Redacting(Protocol):
    """Strips credentials from text (harvesters/redaction.py `Redactor`)."""

    def text(self, value: str) -> str: ...


@dataclass(frozen=True)
class LedgerView:
    """A consistent copy of a ledger, taken under its lock."""

    stats: dict[str, dict[str, int]]
    infos: list[Note]
    warnings: list[Note]
    errors: list[Note]
    token_updates: dict[str, str]
    uids: dict[str, str]
    rate_limit_waits: int
    rate_limit_seconds: float


class Ledger:
    """The counts and notes of one harvest; every method is safe from any thread."""

    def __init__(self, *, redactor: Redacting) -> None:
        self.redactor = redactor  # notes are redacted as they are taken
        self._lock = threading.Lock()
        self._stats: dict[str, dict[str, int]] = {}
        self._infos: list[Note] = []
        self._warnings: list[Note] = []
        self._errors: list[Note] = []
        self._token_updates: dict[str, str] = {}
        self._uids: dict[str, str] = {}
        self._rate_limits: tuple[int, float] = (0, 0.0)  # waits, seconds waited
        self._checkpoints: dict[str, object] = {}

    # --- what a platform records (through harvesters/base.py Harvest) ---
    def count(self, label: str, n: int = 1, day: dt.date | None = None) -> None:
        with self._lock:
            self._count(label, n, day)

    def checkpoint(self, key: str, value: JSONable, **counts: int) -> None:
        json.dumps(value)  # fail now, in the platform's code, on a value that cannot be stored
        with self._lock:
            for label, n in counts.items():
                self._count(label, n, None)
            self._checkpoints[key] = value

    def resume_point(self, key: str, default: Any = None) -> Any:
        with self._lock:
            return self._checkpoints.get(key, default)

    def info(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._note(self._infos, code, message, seed_id)

    def warning(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._note(self._warnings, code, message, seed_id)

    def error(self, code: str, message: str, seed_id: str | None = None) -> None:
        self._note(self._errors, code, message, seed_id)

    def token_update(self, seed_id: str, new_token: object) -> None:
        self._remote_id(self._token_updates, seed_id, new_token, "new token")

    def uid_found(self, seed_id: str, uid: object) -> None:
        self._remote_id(self._uids, seed_id, uid, "uid")

    # --- what the engine records and reads ---
    def rate_limited(self, wait: float) -> None:
        with self._lock:
            waits, seconds = self._rate_limits
            self._rate_limits = (waits + 1, seconds + wait)

    @property
    def rate_limits(self) -> tuple[int, float]:
        """(waits, seconds waited) so far, an earlier run's included."""
        with self._lock:
            return self._rate_limits

    @property
    def failed(self) -> bool:
        """An error was noted: the final status is `completed failure`."""
        with self._lock:
            return bool(self._errors)

    def items_so_far(self) -> int:
        with self._lock:
            return sum(n for counts in self._stats.values() for n in counts.values())

    def view(self) -> LedgerView:
        with self._lock:
            waits, seconds = self._rate_limits
            return LedgerView(stats={day: dict(c) for day, c in sorted(self._stats.items())},
                              infos=list(self._infos), warnings=list(self._warnings), errors=list(self._errors),
                              token_updates=dict(self._token_updates), uids=dict(self._uids),
                              rate_limit_waits=waits, rate_limit_seconds=seconds)

    def journal(self) -> dict[str, Any]:
        """What a resumed run needs to report the whole harvest (JSON): stats, ids, waits, checkpoints, notes."""
        with self._lock:
            return {"stats": {day: dict(counts) for day, counts in self._stats.items()},
                    "token_updates": dict(self._token_updates), "uids": dict(self._uids),
                    "rate_limits": list(self._rate_limits), "checkpoints": dict(self._checkpoints),
                    "infos": [n.to_dict() for n in self._infos], "warnings": [n.to_dict() for n in self._warnings]}

    def restore(self, journal: dict[str, Any], *, counts: bool) -> None:
        """Take up an interrupted run's journal; its stats only when `counts` (the run continues where
        that one got to rather than from the first page)."""
        with self._lock:
            self._checkpoints = dict(journal.get("checkpoints", {}))
            if counts:
                self._stats = {day: dict(c) for day, c in journal.get("stats", {}).items()}
            # the interrupted run's notes come first, so the resumed run's final status carries them
            for notes, key in ((self._infos, "infos"), (self._warnings, "warnings")):
                notes[:0] = [Note(n["code"], n["message"], n.get("seed_id")) for n in journal.get(key, [])]
            self._token_updates = dict(journal.get("token_updates", {}))
            self._uids = dict(journal.get("uids", {}))
            waits, seconds = journal.get("rate_limits", [0, 0.0])
            self._rate_limits = (int(waits), float(seconds))

    def rewind_counts(self, journal: dict[str, Any] | None) -> int:
        """Counts back to a journal's (what the complete WARCs hold, after writing failed); returns the items
        counted before, so the status can say how many were received but not kept."""
        with self._lock:
            received = sum(n for counts in self._stats.values() for n in counts.values())
            self._stats = {day: dict(c) for day, c in (journal or {}).get("stats", {}).items()}
            return received

    def _count(self, label: str, n: int, day: dt.date | None) -> None:
        key = (day or dt.datetime.now(dt.UTC).date()).isoformat()
        per_day = self._stats.setdefault(key, {})
        per_day[label] = per_day.get(label, 0) + n

    def _remote_id(self, into: dict[str, str], seed_id: str, value: object, what: str) -> None:
        """Every platform's uids and token updates come through here: an API's number becomes its decimal
        string; anything else is refused for that seed, so a status never fails validation on it."""
        text = as_text(value)
        if text is None:
            self.error(codes.BAD_RESPONSE, f"the remote gave {kind_of(value)} as the seed's {what}; refused", seed_id)
            return
        with self._lock:
            into[seed_id] = text

    def _note(self, notes: list[Note], code: str, message: str, seed_id: str | None) -> None:
        with self._lock:
            notes.append(Note(code, self.redactor.text(message), seed_id))
