"""XLSX rows built in one pass (exporters/xlsx_rows.py) are XlsxWriter's own bytes: every part of the file is
compared with what XlsxWriter makes of the same rows written cell by cell (write_row would stop a row at a string
past Excel's limit; the export writes the rest of the row), on the values whose writing has rules
(escapes, whitespace, control characters, Excel's string limit, numbers XlsxWriter refuses)."""

from __future__ import annotations

import random
import zipfile

import pytest
import xlsxwriter

from swath.exporters.writers import XlsxWriter
from swath.exporters.xlsx_rows import TextSheet

HEADERS = ["id", "text", "count", "share", "flag", "empty"]

TRICKY = [
    "plain", "", " leading", "trailing ", "\ttab", "line\n", "a\nb", "\u00a0nbsp", "nbsp\u3000",
    "<b>&amp;</b>", 'quote " and >', "<r>looks rich</r>", "<r>half", "ctrl \x00\x01\x1f end", "keep \x09\x0a\x0d",
    "_x0041_ literal", "_x004G_ not", "non\ufffechar\uffff", "emoji 😀 東京 مرحبا", "x" * 16383, "y" * 16384,
    "😀" * 16383 + "z", "😀" * 16384, "z" * 40000,
]
NUMBERS = [0, -1, 7, 2**53 + 1, 10**20, -(10**300), 2**1100, 0.1, -2.5e-8, 1e300, float("nan"), float("inf"),
           float("-inf"), True, False]


def _rows(seed: int, count: int) -> list[list]:
    rng = random.Random(seed)
    pool: list = [*TRICKY, *NUMBERS, None, None, None]
    rows = [[str(n), rng.choice(TRICKY), rng.choice(pool), rng.choice(pool), rng.choice([True, False, None]), None]
            for n in range(count)]
    rows.append([None] * len(HEADERS))  # a row with nothing in it
    rows.extend([[v, None, None, None, None, None] for v in [*TRICKY, *NUMBERS]])
    return rows


def _reference(path, rows: list[list], sheet_rows: int) -> None:
    """The rows through XlsxWriter's own write, cell by cell, sheets split as the export writer splits them (on
    the export's TextSheet: a value shaped like rich text is text)."""
    with open(path, "wb") as fh:
        book = xlsxwriter.Workbook(fh, {"constant_memory": True, "strings_to_urls": False,
                                        "strings_to_formulas": False, "strings_to_numbers": False,
                                        "nan_inf_to_errors": False})
        sheet, row = None, sheet_rows
        for values in rows:
            if row >= sheet_rows:
                sheet, row = book.add_worksheet(worksheet_class=TextSheet), 1
                sheet.write_row(0, 0, HEADERS)
            try:
                for col, value in enumerate(values):
                    sheet.write(row, col, value)
                row += 1  # as the export's writer counts: a refused row's number goes to the next row
            except (TypeError, OverflowError):
                pass  # NaN/inf, ints past floats: refused part-way (an export then fails); the next row goes on
        book.close()


def _ours(path, rows: list[list], sheet_rows: int) -> None:
    writer = XlsxWriter(path=path, headers=HEADERS, sheet_rows=sheet_rows)
    writer.start()
    for values in rows:
        try:
            writer.write(values)
        except (TypeError, OverflowError):
            pass
    writer.finish()


def _parts(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:  # the creation time differs between two files: the rest must not
        return {n: zf.read(n) for n in zf.namelist() if n != "docProps/core.xml"}


@pytest.mark.parametrize("sheet_rows", [1_048_576, 7])
def test_rows_are_the_bytes_xlsxwriter_writes(tmp_path, sheet_rows):
    rows = _rows(seed=sheet_rows, count=300)
    _reference(tmp_path / "reference.xlsx", rows, sheet_rows)
    _ours(tmp_path / "ours.xlsx", rows, sheet_rows)
    reference, ours = _parts(tmp_path / "reference.xlsx"), _parts(tmp_path / "ours.xlsx")
    assert ours.keys() == reference.keys()
    for name in reference:
        assert ours[name] == reference[name], name
