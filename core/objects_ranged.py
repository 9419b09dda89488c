"""A stored object read as a seekable, read-only file: ranged GETs of whole blocks, the last few kept, so a
reader that seeks to a record and reads it (exporters' read_at) fetches only the blocks that record lies in,
and one that reads the object straight through (a scan) fetches each block once.

Every byte fetched is counted, per object URL (`FETCHED`, this process), so the cost of an export can be
checked against what it selected.
"""

from __future__ import annotations

import collections
import io
import threading

from swath.core.objects_base import ObjectStore

BLOCK_SIZE = 1024 * 1024  # a GET per MiB: 100 for a 100 MB WARC's scan, at most a MiB read past one record
KEEP_BLOCKS = 2  # a record straddling two blocks is fetched once; 2 MiB per open WARC (a reader keeps 16 open)
MAX_COUNTED = 100_000  # URLs counted one by one; past them only the total grows (a worker runs for months)

FETCHED: collections.Counter[str] = collections.Counter()  # bytes fetched per object URL, in this process
fetched_total = 0  # every byte fetched, in this process
_counting = threading.Lock()


class RangedFile(io.RawIOBase):
    """The object `key` of `store` (`size` bytes, from its HEAD) as a read-only binary file."""

    def __init__(self, *, store: ObjectStore, key: str, size: int, block_size: int = BLOCK_SIZE) -> None:
        super().__init__()
        self.store, self.key, self.size, self.block_size = store, key, size, block_size
        self.name = store.url(key)
        self.fetched = 0  # bytes this file fetched
        self._pos = 0
        self._blocks: collections.OrderedDict[int, bytes] = collections.OrderedDict()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise OSError(f"seek before the start of {self.name}")
        self._pos = base + offset
        return self._pos

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def read(self, size: int | None = -1) -> bytes:
        end = self.size if size is None or size < 0 else min(self.size, self._pos + size)
        pieces = []
        while self._pos < end:
            number, within = divmod(self._pos, self.block_size)
            block = self._block(number)
            piece = block[within:within + end - self._pos]
            if not piece:
                break  # the object is shorter than its HEAD said: end of file here
            pieces.append(piece)
            self._pos += len(piece)
        return b"".join(pieces)

    def readall(self) -> bytes:
        return self.read(-1)

    def _block(self, number: int) -> bytes:
        global fetched_total
        block = self._blocks.get(number)
        if block is not None:
            self._blocks.move_to_end(number)
            return block
        start = number * self.block_size
        block = self.store.read_range(self.key, start, min(self.block_size, self.size - start))
        self.fetched += len(block)
        with _counting:
            fetched_total += len(block)
            if self.name in FETCHED or len(FETCHED) < MAX_COUNTED:
                FETCHED[self.name] += len(block)
        self._blocks[number] = block
        if len(self._blocks) > KEEP_BLOCKS:
            self._blocks.popitem(last=False)
        return block

    def close(self) -> None:
        self._blocks.clear()
        super().close()
