"""Per-collection state (e.g. since_id per seed) that only advances once the data is safe on disk.

`set()` stages a value; the engine calls `commit()` after the WARC holding the data was closed,
fsynced and renamed. The file is rewritten whole: temp file, fsync, rename, fsync the directory.
`StagedState` is the staging alone; where committed values live is its subclass's business (a file here,
the store's `harvest_state` table when WARCs go to object storage: swath/store/harvest_state.py).
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path
from typing import Any, Protocol

from swath.core.errors import SwathError
from swath.core.jsontypes import JSONObject
from swath.core.paths import fsync_dir, open_lock, open_no_follow, write_atomic
from swath.core.storage import storage_writes
from swath.messages import codes

# fsync_dir: its old home
__all__ = ["STATE_FILE", "CollectionState", "StagedState", "StateStore", "fsync_dir", "write_json_atomic"]

STATE_FILE = "swath-state.json"


def write_json_atomic(path: Path, data: object) -> None:
    """Write `data` as JSON so a crash leaves either the old or the new file, never half of one."""
    with storage_writes(path):  # a full disk leaves the old file and no temp file beside it (write_atomic)
        write_atomic(path, json.dumps(data, sort_keys=True, indent=1).encode("utf-8"), durable=True)


class StateUnreadable(SwathError):
    code = codes.STATE_UNREADABLE  # the harvest is refused before it starts; the file is left as it is


class CollectionState(Protocol):
    """What the recorder needs of a collection's state, wherever it is kept: files here, the store
    (swath/store/harvest_state.py) when WARCs go to object storage."""

    def get(self, key: str, default: Any = None) -> Any: ...
    def set(self, key: str, value: Any) -> None: ...
    def delete(self, key: str) -> None: ...
    def take_pending(self) -> JSONObject: ...
    def commit(self, updates: JSONObject | None = None) -> None: ...


class StagedState:
    """Key -> JSON value for one collection; `get` sees this harvest's staged values too. A subclass says
    where the committed values live: `_load()` reads them all, `_apply(updates)` writes `updates` (None
    deletes a key) in one step that keeps keys other harvests of the collection wrote, and returns them all."""

    def __init__(self) -> None:
        self._pending: JSONObject = {}
        self._mutex = threading.Lock()
        self._committed = self._load()

    def _load(self) -> JSONObject:
        raise NotImplementedError

    def _apply(self, updates: JSONObject) -> JSONObject:
        raise NotImplementedError

    def get(self, key: str, default: Any = None) -> Any:
        with self._mutex:
            value = self._pending[key] if key in self._pending else self._committed.get(key)
            return default if value is None else value

    def set(self, key: str, value: Any) -> None:
        json.dumps(value)  # fail now, in the platform's code, on a value that cannot be stored
        with self._mutex:
            self._pending[key] = value

    def delete(self, key: str) -> None:
        self.set(key, None)

    def take_pending(self) -> JSONObject:
        """Hand over the staged values (the engine commits them once their WARC is closed)."""
        with self._mutex:
            pending, self._pending = self._pending, {}
            return pending

    def commit(self, updates: JSONObject | None = None) -> None:
        """Write `updates` (default: everything staged); None deletes a key.
        Keys written meanwhile by other harvests of the collection are re-read and kept."""
        if updates is None:
            updates = self.take_pending()
        if not updates:
            return
        current = self._apply(updates)
        with self._mutex:
            self._committed = current


class StateStore(StagedState):
    """The collection's state in `swath-state.json` in its folder (the default)."""

    def __init__(self, *, directory: Path) -> None:
        self.path = directory / STATE_FILE
        self._lock_path = directory / f".{STATE_FILE}.lock"
        super().__init__()

    def _load(self) -> JSONObject:
        return self._read()

    def _read(self) -> JSONObject:
        try:
            with open_no_follow(self.path) as fh:  # a link in its place is refused: swath never links its state
                data = fh.read()
        except FileNotFoundError:
            return {}
        try:  # json, as it was written: any integer (orjson stops at 64 bits); nesting past the stack is refused
            state = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # ValueError: JSONDecodeError, UnicodeDecodeError
            state, why = None, f"not JSON ({type(exc).__name__})"
        else:
            why = f"a JSON {type(state).__name__}, not an object"
        if not isinstance(state, dict):
            raise StateUnreadable(f"{self.path} is {why[:200]}; swath did not write it so. Move it aside to start "
                                  "the collection's state afresh, or restore it from a backup")
        return state

    def _apply(self, updates: JSONObject) -> JSONObject:
        with storage_writes(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            lock = os.fdopen(open_lock(self._lock_path))
        # a file lock, because two harvests of one collection may commit at the same time
        with lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = self._read()
            for key, value in updates.items():
                if value is None:
                    current.pop(key, None)
                else:
                    current[key] = value
            write_json_atomic(self.path, current)
        return current
