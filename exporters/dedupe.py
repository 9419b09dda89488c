"""Ids already exported, in bounded memory: a set of 64-bit keys that spills to an on-disk SQLite
table past `memory_limit` ids, so tens of millions of items never hold more than a few MB of RAM."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path


def _hashed(item_type: str, item_id: str) -> int:
    digest = hashlib.blake2b(f"{item_type}\x00{item_id}".encode(), digest_size=8).digest()
    return -(int.from_bytes(digest, "big") >> 1) - 1  # negative: never equal to a numeric key


class SeenIds:
    def __init__(self, *, spill_dir: Path, memory_limit: int = 1_000_000) -> None:
        self.spill_dir = spill_dir
        self.memory_limit = memory_limit
        self._mem: set[int] = set()
        self._db: sqlite3.Connection | None = None
        self._db_path: Path | None = None
        self._tables: dict[str, int] = {}  # table -> 0..7, so v1 and v2 copies of one tweet stay distinct

    def _key(self, item_type: str, item_id: str) -> int:
        # Numeric ids (tweets, photos, posts) are their own key, tagged with the table in 3 bits;
        # anything else is hashed to 63 bits.
        tag = self._tables.get(item_type)
        if tag is None:
            tag = self._tables[item_type] = len(self._tables)
        if tag < 8 and item_id.isdigit() and len(item_id) < 19:
            return int(item_id) * 8 + tag
        return _hashed(item_type, item_id)

    def add(self, item_type: str, item_id: str) -> bool:
        """True if the id was new (and is now recorded)."""
        key = self._key(item_type, item_id)
        if self._db is None:
            if key in self._mem:
                return False
            self._mem.add(key)
            if len(self._mem) > self.memory_limit:
                self._spill()
            return True
        cur = self._db.execute("INSERT OR IGNORE INTO seen(k) VALUES (?)", (key,))
        return cur.rowcount == 1

    def _spill(self) -> None:
        self.spill_dir.mkdir(parents=True, exist_ok=True)
        self._db_path = self.spill_dir / f".dedupe-{id(self)}.sqlite"
        self._db = sqlite3.connect(self._db_path, isolation_level=None)
        self._db.executescript(
            "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000;"
            "CREATE TABLE IF NOT EXISTS seen(k INTEGER PRIMARY KEY) WITHOUT ROWID; BEGIN;"
        )
        self._db.executemany("INSERT OR IGNORE INTO seen(k) VALUES (?)", ((k,) for k in self._mem))
        self._mem = set()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._db_path is not None:
            self._db_path.unlink(missing_ok=True)
