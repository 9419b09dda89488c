"""Where export rows go: numbered segment files written under temporary names and renamed only when
the whole export succeeded, so a failed export never leaves files that look complete."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from swath.core.paths import safe_id
from swath.exporters.writers import Writer


class SegmentedOutput:
    """`<export id>[_<table>]_001.<ext>`, `_002`... with at most `segment_size` items each."""

    def __init__(self, *, directory: Path, export_id: str, table: str | None, writer_cls: type[Writer],
                 headers: list[str], segment_size: int | None) -> None:
        self.directory = directory
        stem = safe_id(export_id)  # the id comes from the message: `../x` or `/x` must not leave the directory
        self.stem = f"{stem}_{table}" if table else stem
        self.writer_cls = writer_cls
        self.headers = headers
        limits = [n for n in (segment_size, writer_cls.max_rows) if n]
        self.limit = min(limits) if limits else None
        self.count = 0  # items written in all segments
        self._in_segment = 0
        self._writer: Writer | None = None
        self._files: list[tuple[Path, Path]] = []  # (temporary, final)

    def _open(self) -> None:
        number = len(self._files) + 1
        final = self.directory / f"{self.stem}_{number:03d}.{self.writer_cls.ext}"
        temp = self.directory / f".{final.name}.part"
        self._files.append((temp, final))
        self._writer = self.writer_cls(path=temp, headers=self.headers)
        self._writer.start()
        self._in_segment = 0

    def write(self, payload: Any) -> None:
        """One item, already encoded by the format's encoder."""
        if self._writer is None or (self.limit and self._in_segment >= self.limit):
            self._close_segment()
            self._open()
        self._writer.write(payload)
        self._in_segment += 1
        self.count += 1

    def write_many(self, payloads: list[Any]) -> None:
        """Items in order, as write() would take them one by one; a segment's share in one call."""
        done = 0
        while done < len(payloads):
            if self._writer is None or (self.limit and self._in_segment >= self.limit):
                self._close_segment()
                self._open()
            take = len(payloads) - done
            if self.limit:
                take = min(take, self.limit - self._in_segment)
            self._writer.write_many(payloads[done:done + take] if take < len(payloads) else payloads)
            self._in_segment += take
            self.count += take
            done += take

    def _close_segment(self) -> None:
        if self._writer is not None:
            self._writer.finish()
            self._writer = None

    def finish(self) -> None:
        if not self._files:
            self._open()  # an export with no items still gets its (header-only) file
        self._close_segment()

    def commit(self) -> list[Path]:
        for temp, final in self._files:
            os.replace(temp, final)
        return [final for _, final in self._files]

    def abort(self) -> None:
        try:
            self._close_segment()
        except Exception:  # noqa: BLE001 - the export already failed; removing its files matters more
            pass
        for temp, _ in self._files:
            temp.unlink(missing_ok=True)
