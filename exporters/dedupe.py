"""Ids already exported, in bounded memory: per table, a set of 64-bit keys that spills to an on-disk
SQLite table past `memory_limit` ids, so tens of millions of items never hold more than a few MB of RAM.

Keys are made where the items are read (`dedupe_key`, possibly in a worker process), so the process
that writes only does set operations, a whole batch at a time when nothing in it repeats.
"""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

_MAX_KEY = (1 << 63) - 1


def dedupe_key(item_id: str) -> int:
    """A 64-bit key: a numeric id (tweets, photos, posts) is its own key; anything else is hashed to a
    negative number, so it never equals a numeric key."""
    if item_id.isascii() and item_id.isdigit() and (item_id[0] != "0" or len(item_id) == 1):
        key = int(item_id)  # no leading zeros: "07" and "7" are different ids, not one number
        if key <= _MAX_KEY:
            return key
    digest = hashlib.blake2b(item_id.encode(), digest_size=8).digest()
    return -(int.from_bytes(digest, "big") >> 1) - 1


class SeenIds:
    def __init__(self, *, spill_dir: Path, memory_limit: int = 1_000_000) -> None:
        self.spill_dir = spill_dir
        self.memory_limit = memory_limit
        self._mem: dict[str, set[int]] = {}  # table -> keys, so v1 and v2 copies of one tweet stay distinct
        self._held = 0
        self._db: sqlite3.Connection | None = None
        self._db_path: Path | None = None

    def add_keys(self, table: str, keys: list[int]) -> list[bool] | None:
        """Record `keys` (from dedupe_key) in order; None if every one was new (the common case, settled
        with two set operations), else whether each was new."""
        if self._db is None:
            mem = self._mem.setdefault(table, set())
            batch = set(keys)
            if len(batch) == len(keys) and mem.isdisjoint(batch):
                mem |= batch
                self._held += len(batch)
                if self._held > self.memory_limit:
                    self._spill()
                return None
            fresh = []
            for key in keys:
                fresh.append(key not in mem)
                mem.add(key)
            self._held = sum(map(len, self._mem.values()))
            if self._held > self.memory_limit:
                self._spill()
            return fresh
        fresh = [self._db.execute("INSERT OR IGNORE INTO seen(t, k) VALUES (?, ?)", (table, key)).rowcount == 1
                 for key in keys]
        return None if all(fresh) else fresh

    def _spill(self) -> None:
        self.spill_dir.mkdir(parents=True, exist_ok=True)
        self._db_path = self.spill_dir / f".dedupe-{id(self)}.sqlite"
        self._db = sqlite3.connect(self._db_path, isolation_level=None)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000;"
            "CREATE TABLE IF NOT EXISTS seen(t TEXT, k INTEGER, PRIMARY KEY (t, k)) WITHOUT ROWID; BEGIN;"
        )
        for table, keys in self._mem.items():
            self._db.executemany("INSERT OR IGNORE INTO seen(t, k) VALUES (?, ?)", ((table, k) for k in keys))
        self._mem = {}

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._db_path is not None:
            self._db_path.unlink(missing_ok=True)
