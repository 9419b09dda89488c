"""One writer per export format, all with the same life: start(), write(payload), finish().

Turning an item into its bytes (encoder) is separate from writing them, so the encoding can run in
worker processes while one process owns the files. A writer writes to a path it is given; naming,
segments and atomic renames live in output.py.
"""

from __future__ import annotations

import csv
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Protocol

import orjson

from swath.core.paths import create_new


class _CsvRowModule(Protocol):
    """The C encoder's interface (_csvrow.c), which mypy cannot read from the built extension."""

    def encode_row(self, row: list[Any], delimiter: str = ",", /) -> bytes: ...


_csvrow: _CsvRowModule | None
try:
    import swath.exporters._csvrow as _csvrow_extension

    _csvrow = _csvrow_extension
except ImportError:  # built without a C compiler: the csv module writes the same bytes, slower
    _csvrow = None

# (item, row) -> payload; `row` is None only for writers whose needs_row is False.
Encoder = Callable[[Any, "list[Any] | None"], Any]


class Writer:
    ext: ClassVar[str]
    needs_row: ClassVar[bool] = True  # False: the table's columns are not computed at all
    needs_raw: ClassVar[bool] = False  # True: sources must slice each item's raw JSON bytes
    max_rows: ClassVar[int | None] = None  # a hard per-file limit of the format
    cells_cut = 0  # cells the format could not hold whole (XLSX: a string past 32,767 characters), for the status

    def __init__(self, *, path: Path, headers: list[str]) -> None:
        self.path = path
        self.headers = headers

    @classmethod
    def encoder(cls, headers: list[str]) -> Encoder:
        """A function (item, row) -> what write() takes; one per process, it may keep buffers."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def write(self, payload: Any) -> None:
        raise NotImplementedError

    def write_many(self, payloads: list[Any]) -> None:
        for payload in payloads:
            self.write(payload)

    def finish(self) -> None:
        raise NotImplementedError


class _BinaryWriter(Writer):
    def start(self) -> None:
        self._fh = create_new(self.path, replace=True, buffering=1 << 20)  # a stale or planted .part: replaced

    def write(self, payload: bytes) -> None:
        self._fh.write(payload)

    def write_many(self, payloads: list[bytes]) -> None:
        self._fh.write(b"".join(payloads))

    def finish(self) -> None:
        self._fh.close()


class _Sink:
    __slots__ = ("write",)
    write: Callable[[str], object]


def _python_encode_row(delimiter: str) -> Callable[[list[Any]], bytes]:
    """The csv module's record as UTF-8 bytes (what the C encoder writes, for builds without it)."""
    lines: list[str] = []
    sink = _Sink()
    sink.write = lines.append  # the csv writer hands each formatted row to write() exactly once
    out = csv.writer(sink, delimiter=delimiter)

    def encode(row: list[Any]) -> bytes:
        out.writerow(row)  # csv writes None as an empty field
        return lines.pop().encode()

    return encode


def csv_row_encoder(delimiter: str = ",") -> Callable[[list[Any]], bytes]:
    """row -> one CSV record (excel dialect, CRLF line ends) as UTF-8 bytes; the C encoder when it was built."""
    if _csvrow is None:
        return _python_encode_row(delimiter)
    encode_row = _csvrow.encode_row
    return lambda row: encode_row(row, delimiter)


class CsvWriter(_BinaryWriter):
    ext = "csv"
    delimiter: ClassVar[str] = ","

    @classmethod
    def encoder(cls, headers: list[str]) -> Encoder:
        encode_row = csv_row_encoder(cls.delimiter)

        def encode(item: Any, row: list[Any] | None) -> bytes:
            if row is None:  # what the C encoder raises for it
                raise TypeError("a row must be a sequence")
            return encode_row(row)

        return encode

    def start(self) -> None:
        super().start()
        self._fh.write(csv_row_encoder(self.delimiter)(self.headers))


class TsvWriter(CsvWriter):
    ext = "tsv"
    delimiter = "\t"


_XLSX_TYPES = (str, int, float, bool)
_STRING_CUT = -2  # what XlsxWriter's write returns for a string it cut to Excel's 32,767 characters


class XlsxWriter(Writer):
    ext = "xlsx"
    SHEET_ROWS = 1_048_576  # Excel's rows per sheet, the header row included: past it, the next sheet

    def __init__(self, *, path: Path, headers: list[str], sheet_rows: int | None = None) -> None:
        super().__init__(path=path, headers=headers)
        self.sheet_rows = sheet_rows or self.SHEET_ROWS

    @classmethod
    def encoder(cls, headers: list[str]) -> Encoder:
        def encode(item: Any, row: list[Any] | None) -> list[Any]:
            if row is None:  # what iterating it raises
                raise TypeError("'NoneType' object is not iterable")
            return [v if v is None or type(v) in _XLSX_TYPES else str(v) for v in row]

        return encode

    def start(self) -> None:
        import xlsxwriter  # here, not at the top: the CLI and the web app read FORMATS' names at start

        from swath.exporters.xlsx_rows import TextSheet, column_refs, row_xml

        # constant_memory: each row is flushed to a temp file when the next starts, so memory stays flat.
        self._fh = create_new(self.path, replace=True)  # xlsxwriter writes the ZIP to this handle on close
        self._book = xlsxwriter.Workbook(
            self._fh,
            {"constant_memory": True, "strings_to_urls": False, "strings_to_formulas": False,
             "strings_to_numbers": False},
        )
        self._row_xml = row_xml
        self._sheet_class = TextSheet
        self._refs = column_refs(len(self.headers))
        # row_xml keeps XlsxWriter's sheet dimensions right only when the header fills every column
        self._fast = all(type(h) is str and h for h in self.headers)
        self._new_sheet()

    def _new_sheet(self) -> None:
        # constant_memory flushes a sheet's rows as it goes; a new sheet closes the last one's for good
        self._sheet = self._book.add_worksheet(worksheet_class=self._sheet_class)
        self._sheet.write_row(0, 0, self.headers)
        self._row = 1

    def write(self, payload: list[Any]) -> None:
        if self._row >= self.sheet_rows:
            self._new_sheet()
        row, sheet = self._row, self._sheet
        xml = self._row_xml(row, payload, self._refs) if self._fast and len(payload) == len(self._refs) else None
        if xml is None or (sheet.table and row <= sheet.previous_row):  # the row XlsxWriter holds failed part-way
            # cell by cell: write_row stops at a string past Excel's limit and would drop the cells after it
            for col, value in enumerate(payload):
                if sheet.write(row, col, value) == _STRING_CUT:
                    self.cells_cut += 1
        elif xml:
            # What XlsxWriter does when a row's first cell arrives: write the row it holds (the header, or one it
            # wrote itself), then this row goes where its own _write_single_row would have put it.
            if sheet.table:
                sheet._write_single_row(row)
            sheet.previous_row = row
            sheet.fh.write(xml)
            sheet.dim_rowmax = row
        self._row += 1

    def finish(self) -> None:
        with self._fh:
            self._book.close()


class JsonWriter(_BinaryWriter):
    """One JSON object per line with the table's columns."""

    ext = "json"

    @classmethod
    def encoder(cls, headers: list[str]) -> Encoder:
        keys = tuple(headers)

        def encode(item: Any, row: list[Any] | None) -> bytes:
            if row is None:  # what zip() raises for it
                raise TypeError("'NoneType' object is not iterable")
            return orjson.dumps(dict(zip(keys, row)), default=str, option=orjson.OPT_APPEND_NEWLINE)

        return encode


class JsonFullWriter(_BinaryWriter):
    """The platform's raw items, one per line, byte for byte as the API sent them."""

    ext = "jsonl"
    needs_row = False
    needs_raw = True

    @classmethod
    def encoder(cls, headers: list[str]) -> Encoder:
        def encode(item: Any, row: list[Any] | None) -> bytes:  # the row is not computed (needs_row = False)
            raw = item.raw
            if b"\n" in raw:  # a pretty-printed body: JSON whitespace only, strings cannot hold raw newlines
                raw = raw.replace(b"\r\n", b" ").replace(b"\n", b" ")
            return raw + b"\n"

        return encode


class DehydrateWriter(_BinaryWriter):
    """Ids only, one per line (rehydrate them with the platform's API)."""

    ext = "txt"
    needs_row = False

    @classmethod
    def encoder(cls, headers: list[str]) -> Encoder:
        return lambda item, row: item.id.encode() + b"\n"


FORMATS: dict[str, type[Writer]] = {
    "csv": CsvWriter,
    "tsv": TsvWriter,
    "xlsx": XlsxWriter,
    "json": JsonWriter,
    "json_full": JsonFullWriter,
    "dehydrate": DehydrateWriter,
}
