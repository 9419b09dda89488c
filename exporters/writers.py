"""One writer per export format, all with the same life: start(), write(item, row), finish().

A writer writes to a path it is given; naming, segments and atomic renames live in output.py.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, ClassVar

import orjson
import xlsxwriter


class Writer:
    ext: ClassVar[str]
    needs_row: ClassVar[bool] = True  # False: the table's columns are not computed at all
    needs_raw: ClassVar[bool] = False  # True: sources must slice each item's raw JSON bytes
    max_rows: ClassVar[int | None] = None  # a hard per-file limit of the format

    def __init__(self, *, path: Path, headers: list[str]) -> None:
        self.path = path
        self.headers = headers

    def start(self) -> None:
        raise NotImplementedError

    def write(self, item: Any, row: list[Any] | None) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        raise NotImplementedError


def _cell(value: Any) -> Any:
    return "" if value is None else value


class CsvWriter(Writer):
    ext = "csv"
    dialect_args: ClassVar[dict[str, Any]] = {}

    def start(self) -> None:
        self._fh = open(self.path, "w", newline="", encoding="utf-8", buffering=1 << 20)
        self._csv = csv.writer(self._fh, **self.dialect_args)
        self._csv.writerow(self.headers)

    def write(self, item: Any, row: list[Any] | None) -> None:
        self._csv.writerow(row)  # csv writes None as an empty field

    def finish(self) -> None:
        self._fh.close()


class TsvWriter(CsvWriter):
    ext = "tsv"
    dialect_args = {"delimiter": "\t"}


class XlsxWriter(Writer):
    ext = "xlsx"
    max_rows = 1_048_575  # Excel's sheet limit (1,048,576) minus the header row

    def start(self) -> None:
        # constant_memory: each row is flushed to a temp file when the next starts, so memory stays flat.
        self._book = xlsxwriter.Workbook(
            str(self.path),
            {"constant_memory": True, "strings_to_urls": False, "strings_to_formulas": False,
             "strings_to_numbers": False},
        )
        self._sheet = self._book.add_worksheet()
        self._sheet.write_row(0, 0, self.headers)
        self._row = 1

    def write(self, item: Any, row: list[Any] | None) -> None:
        cells = [v if type(v) in (str, int, float, bool) or v is None else str(v) for v in row]
        self._sheet.write_row(self._row, 0, cells)
        self._row += 1

    def finish(self) -> None:
        self._book.close()


class _BinaryWriter(Writer):
    def start(self) -> None:
        self._fh = open(self.path, "wb", buffering=1 << 20)

    def finish(self) -> None:
        self._fh.close()


class JsonWriter(_BinaryWriter):
    """One JSON object per line with the table's columns."""

    ext = "json"

    def write(self, item: Any, row: list[Any] | None) -> None:
        self._fh.write(orjson.dumps(dict(zip(self.headers, row)), default=str))
        self._fh.write(b"\n")


class JsonFullWriter(_BinaryWriter):
    """The platform's raw items, one per line, byte for byte as the API sent them."""

    ext = "jsonl"
    needs_row = False
    needs_raw = True

    def write(self, item: Any, row: list[Any] | None) -> None:
        self._fh.write(item.raw.replace(b"\r\n", b" ").replace(b"\n", b" ") if b"\n" in item.raw else item.raw)
        self._fh.write(b"\n")


class DehydrateWriter(_BinaryWriter):
    """Ids only, one per line (rehydrate them with the platform's API)."""

    ext = "txt"
    needs_row = False

    def write(self, item: Any, row: list[Any] | None) -> None:
        self._fh.write(item.id.encode())
        self._fh.write(b"\n")


FORMATS: dict[str, type[Writer]] = {
    "csv": CsvWriter,
    "tsv": TsvWriter,
    "xlsx": XlsxWriter,
    "json": JsonWriter,
    "json_full": JsonFullWriter,
    "dehydrate": DehydrateWriter,
}
