"""Where export rows go: numbered segment files written under temporary names and renamed only when
the whole export succeeded, so a failed export never leaves files that look complete. Outputs holds one
per table of an export."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from swath.core.errors import SwathError
from swath.core.paths import safe_id
from swath.exporters.records import Payload
from swath.exporters.table import Table
from swath.exporters.writers import Writer
from swath.messages import codes


class OutputBlocked(SwathError):
    """A name the export's files take is held by a folder: the export fails before any file is renamed."""


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
        self.cells_cut = 0  # cells the format could not hold whole, in all segments
        self._in_segment = 0
        self._writer: Writer | None = None
        self._files: list[tuple[Path, Path]] = []  # (temporary, final)

    def _open(self) -> Writer:
        number = len(self._files) + 1
        final = self.directory / f"{self.stem}_{number:03d}.{self.writer_cls.ext}"
        temp = self.directory / f".{final.name}.part"
        self._files.append((temp, final))
        self._writer = self.writer_cls(path=temp, headers=self.headers)
        self._writer.start()
        self._in_segment = 0
        return self._writer

    def _current(self) -> Writer:
        """The segment the next item goes to, a new one when the last is full."""
        if self._writer is None or (self.limit and self._in_segment >= self.limit):
            self._close_segment()
            return self._open()
        return self._writer

    def write(self, payload: Payload) -> None:
        """One item, already encoded by the format's encoder."""
        self._current().write(payload)
        self._in_segment += 1
        self.count += 1

    def write_many(self, payloads: list[Payload]) -> None:
        """Items in order, as write() would take them one by one; a segment's share in one call."""
        done = 0
        while done < len(payloads):
            writer = self._current()
            take = len(payloads) - done
            if self.limit:
                take = min(take, self.limit - self._in_segment)
            writer.write_many(payloads[done:done + take] if take < len(payloads) else payloads)
            self._in_segment += take
            self.count += take
            done += take

    def _close_segment(self) -> None:
        if self._writer is not None:
            self._writer.finish()
            self.cells_cut += self._writer.cells_cut
            self._writer = None

    def finish(self) -> None:
        if not self._files:
            self._open()  # an export with no items still gets its (header-only) file
        self._close_segment()

    def blocked(self) -> Path | None:
        """A final name held by a folder (the rename would fail there, after the segments before it had theirs)."""
        return next((final for _, final in self._files if final.is_dir() and not final.is_symlink()), None)

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


@dataclass(frozen=True)
class Written:
    """One table's committed files."""

    table: str
    items: int
    files: list[Path]
    cells_cut: int = 0  # cells the format could not hold whole (XLSX's 32,767-character strings)


class Outputs:
    """One SegmentedOutput per table, opened at the table's first write; kept all together or removed."""

    def __init__(self, *, directory: Path, export_id: str, writer_cls: type[Writer], segment_size: int | None,
                 tables: Mapping[str, Table], primary: str) -> None:
        self.directory = directory
        self.export_id = export_id
        self.writer_cls = writer_cls
        self.segment_size = segment_size
        self.tables = tables
        self.primary = primary  # its files carry no table name
        self._outputs: dict[str, SegmentedOutput] = {}  # in the order tables were first written

    def _output(self, table: str) -> SegmentedOutput:
        out = self._outputs.get(table)
        if out is None:
            out = self._outputs[table] = SegmentedOutput(
                directory=self.directory, export_id=self.export_id, table=None if table == self.primary else table,
                writer_cls=self.writer_cls, headers=self.tables[table].headers, segment_size=self.segment_size,
            )
        return out

    def write(self, table: str, payloads: list[Payload]) -> None:
        """Encoded items of one table, in order (none: the table still gets its file)."""
        self._output(table).write_many(payloads)

    def commit(self) -> list[Written]:
        """Finish every table (the primary table always gets its file, even when nothing matched), then
        give each its final name."""
        self._output(self.primary)
        for out in self._outputs.values():
            out.finish()
        # every name checked before any is given: a failed export leaves no file that looks like part of it
        if (folder := next((f for out in self._outputs.values() if (f := out.blocked())), None)) is not None:
            raise OutputBlocked(f"{folder} is a folder, where this export's file goes; export to another path",
                                code=codes.BAD_REQUEST)
        return [Written(table, out.count, out.commit(), out.cells_cut) for table, out in self._outputs.items()]

    def abort(self) -> None:
        for out in self._outputs.values():
            out.abort()
