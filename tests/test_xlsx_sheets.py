"""XLSX exports past Excel's rows per sheet (exporters/writers.py): the next sheet, the header row repeated,
every row kept once and in order. Shown with a small sheet so no test writes a million rows."""

from __future__ import annotations

import zipfile

import pytest
from lxml import etree

from swath.exporters.writers import XlsxWriter

_NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def _sheets(path) -> list[list[list[str]]]:
    with zipfile.ZipFile(path) as zf:
        names = sorted((n for n in zf.namelist() if n.startswith("xl/worksheets/sheet")),
                       key=lambda n: int(n.removeprefix("xl/worksheets/sheet").removesuffix(".xml")))
        return [[["".join(c.itertext()) for c in row.iterfind("m:c", _NS)]
                 for row in etree.fromstring(zf.read(name)).iterfind(".//m:row", _NS)] for name in names]


def test_a_full_sheet_continues_on_the_next_with_the_header_repeated(tmp_path):
    headers = ["id", "text"]
    rows = [[str(i), f"item {i}"] for i in range(7)]
    writer = XlsxWriter(path=tmp_path / "out.xlsx", headers=headers, sheet_rows=3)
    writer.start()
    for row in rows:
        writer.write(XlsxWriter.encoder(headers)(None, row))
    writer.finish()
    sheets = _sheets(tmp_path / "out.xlsx")
    assert [len(sheet) for sheet in sheets] == [3, 3, 3, 2]  # each sheet: the header and at most 2 rows
    assert all(sheet[0] == headers for sheet in sheets)
    assert [row for sheet in sheets for row in sheet[1:]] == rows


def test_excel_limit_is_the_default_and_one_file_holds_every_row(tmp_path):
    writer = XlsxWriter(path=tmp_path / "out.xlsx", headers=["id"])
    assert writer.sheet_rows == 1_048_576
    assert XlsxWriter.max_rows is None  # no new file at the sheet limit: a new sheet instead


@pytest.mark.parametrize("long_col", [0, 1, 2])
def test_a_cell_past_excels_limit_is_cut_there_and_the_rest_of_its_row_kept(tmp_path, long_col):
    limit = 32767  # Excel's characters per cell
    headers = ["a", "b", "c"]
    row = [f"value {i}" for i in range(len(headers))]
    row[long_col] = "x" * (limit + 1000)
    writer = XlsxWriter(path=tmp_path / "out.xlsx", headers=headers)
    writer.start()
    encode = XlsxWriter.encoder(headers)
    for payload in (["short", "row", "before"], row, ["short", "row", "after"]):
        writer.write(encode(None, payload))
    writer.finish()

    assert writer.cells_cut == 1  # what the export's cells_truncated warning counts
    kept = [value if i != long_col else "x" * limit for i, value in enumerate(row)]
    assert _sheets(tmp_path / "out.xlsx") == [[headers, ["short", "row", "before"], kept, ["short", "row", "after"]]]


# A remote's text shaped like XlsxWriter's pre-built rich text: written raw, it closes its cell and adds a formula.
_RICH_LOOKALIKE = ('<r><t>see</t></r></is></c><c r="B2"><f>HYPERLINK("http://127.0.0.1:9/?"&amp;A2,"open")</f>'
                   '</c><c r="C2" t="inlineStr"><is><r><t>x</t></r>')


@pytest.mark.parametrize("long_value", [False, True], ids=["one-pass row", "cell by cell"])
def test_a_value_shaped_like_rich_text_is_written_as_text_never_as_sheet_xml(tmp_path, long_value):
    headers = ["text", "other", "more"]
    row = [_RICH_LOOKALIKE, "z" * 20000 if long_value else "b", "<r>plain</r>"]  # a long cell: XlsxWriter's path
    writer = XlsxWriter(path=tmp_path / "out.xlsx", headers=headers)
    writer.start()
    writer.write(XlsxWriter.encoder(headers)(None, row))
    writer.finish()

    with zipfile.ZipFile(tmp_path / "out.xlsx") as zf:
        sheet = etree.fromstring(zf.read("xl/worksheets/sheet1.xml"))
    assert sheet.find(".//m:f", _NS) is None  # no formula came in with the value
    assert _sheets(tmp_path / "out.xlsx") == [[headers, row]]  # each value whole, in its own cell
