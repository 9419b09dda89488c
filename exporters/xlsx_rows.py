"""A sheet row as XlsxWriter's constant_memory mode writes it, built in one pass instead of one call per cell.

XlsxWriter spends about 4 µs a cell (type dispatch, a cell tuple, a dict per row, then the XML); rows of an
export are plain values (str, int, float, bool, None), so their `<row>` element is built here with the same
rules and bytes, and written to the sheet's row file where XlsxWriter would write it. Anything this does not
reproduce exactly (a string past Excel's 32,767 units, which XlsxWriter cuts and the writer counts; a number
XlsxWriter turns into an error or refuses) returns None, and XlsxWriter writes that row itself, cell by cell,
on a TextSheet. tests/test_xlsx_rows.py compares both on such values.
"""

from __future__ import annotations

import math
import re
from typing import Any

from xlsxwriter.utility import xl_col_to_name
from xlsxwriter.worksheet import Worksheet, _preserve_whitespace

# What XlsxWriter's _escape_control_characters changes: its two patterns and the two non-characters.
_CONTROL = re.compile("_x[0-9a-fA-F]{4}_|[\x00-\x08\x0b-\x1f\ufffe\uffff]")
_escape_control = Worksheet._escape_control_characters
_XML = re.compile("[&<>]")  # what XMLwriter._escape_data replaces
_STRMAX = 32767  # Excel's string length, in UTF-16 units
_INT_LIMIT = 1 << 1000  # ints XlsxWriter formats through float (past ~2**1023 it raises)


class TextSheet(Worksheet):
    """A worksheet whose strings are always text. XlsxWriter writes a string shaped `<r>…</r>` into the sheet
    unescaped, as pre-built rich text: from a remote, such a value could close its cell and add formulas."""

    def _xml_rich_inline_string(self, string: str, attributes: Any = ()) -> None:
        # only reached for a string that looks rich: the export never writes rich text
        self._xml_inline_string(string, _preserve_whitespace(string), list(attributes))


def column_refs(count: int) -> list[str]:
    return [xl_col_to_name(col) for col in range(count)]


def row_xml(row: int, values: list[Any], refs: list[str]) -> str | None:
    """The `<row>` element of zero-based `row` ("" when every value is empty: XlsxWriter writes no element),
    or None when XlsxWriter must write this row."""
    r = str(row + 1)
    parts = []
    for ref, v in zip(refs, values):
        if v is None:
            continue
        kind = type(v)
        if kind is str:
            if not v:
                continue  # XlsxWriter writes "" as a blank: no cell
            if len(v) > _STRMAX // 2:  # a string past half the limit may be past it (UTF-16 units)
                return None
            if _CONTROL.search(v) is not None:
                v = _escape_control(v)
            # ^\s or \s$ (XlsxWriter's _preserve_whitespace): \s is what str.isspace() accepts
            space = ' xml:space="preserve"' if v[0].isspace() or v[-1].isspace() else ""
            if _XML.search(v) is not None:
                v = v.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            parts.append(f'<c r="{ref}{r}" t="inlineStr"><is><t{space}>{v}</t></is></c>')
        elif kind is int:
            if not -_INT_LIMIT < v < _INT_LIMIT:
                return None
            parts.append(f'<c r="{ref}{r}"><v>{v:.16G}</v></c>')
        elif kind is float:
            if not math.isfinite(v):
                return None
            parts.append(f'<c r="{ref}{r}"><v>{v:.16G}</v></c>')
        elif kind is bool:
            parts.append(f'<c r="{ref}{r}" t="b"><v>{1 if v else 0}</v></c>')
        else:
            return None
    if not parts:
        return ""
    return f'<row r="{r}">' + "".join(parts) + "</row>"
