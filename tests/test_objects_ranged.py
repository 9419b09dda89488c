"""core/objects_ranged.py RangedFile: reads, seeks and the bytes-fetched count, over the local store (the same
ObjectStore interface the S3 store serves; tests/test_export_s3.py runs it on SeaweedFS)."""

from __future__ import annotations

import io
import random

from swath.core.objects import LocalStore
from swath.core.objects_ranged import RangedFile


def test_random_seeks_and_reads_give_the_object_bytes_and_each_block_is_fetched_at_most_once_in_order(
        tmp_path, swath_seed) -> None:
    rng = random.Random(swath_seed)
    data = rng.randbytes(10_000 + rng.randrange(5000))
    (tmp_path / "k.warc").write_bytes(data)
    store = LocalStore(root=tmp_path)
    with RangedFile(store=store, key="k.warc", size=len(data), block_size=1000) as fh:
        for _ in range(200):
            where = rng.randrange(len(data) + 10)
            fh.seek(where)
            size = rng.choice([-1, 0, 1, rng.randrange(3000)])
            expected = data[where:] if size < 0 else data[where:where + size]
            assert fh.read(size) == expected
            assert fh.tell() == (where + len(expected) if where <= len(data) else where)
        assert fh.seek(-5, io.SEEK_END) == len(data) - 5 and fh.read() == data[-5:]
    with RangedFile(store=store, key="k.warc", size=len(data), block_size=1000) as fh:
        assert b"".join(iter(lambda: fh.read(333), b"")) == data  # read straight through: every block once
        assert fh.fetched == len(data)
