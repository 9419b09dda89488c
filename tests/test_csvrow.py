"""The C CSV record encoder writes exactly what the csv module writes (its fallback and reference)."""

from __future__ import annotations

import csv
import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swath.exporters import writers

try:
    from swath.exporters import _csvrow as csvrow
except ImportError:  # built without a C compiler: the csv module is used, and its tests below still run
    csvrow = None
needs_c = pytest.mark.skipif(csvrow is None, reason="swath.exporters._csvrow was not built (no C compiler)")

# Text that stresses quoting: the special characters often, the rest of Unicode (no lone surrogates:
# they are not UTF-8, and orjson never yields them) sometimes.
special = st.sampled_from([",", "\t", '"', "\r", "\n", "\r\n", " ", "", "\x00", "é", "東京", "😀", "None"])
text = st.lists(st.one_of(special, st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)),
                max_size=6).map("".join)
field = st.one_of(st.none(), text, st.integers(), st.floats(), st.booleans())
rows = st.lists(field, max_size=12)


def reference(row: list, delimiter: str) -> bytes:
    out = io.StringIO()
    csv.writer(out, delimiter=delimiter).writerow(row)
    return out.getvalue().encode()


@settings(max_examples=2000, deadline=None)
@given(rows, st.sampled_from([",", "\t"]))
def test_both_encoders_write_what_the_csv_module_writes(row: list, delimiter: str) -> None:
    assert writers.csv_row_encoder(delimiter)(row) == reference(row, delimiter)
    assert writers._python_encode_row(delimiter)(row) == reference(row, delimiter)


@needs_c
@pytest.mark.parametrize("row", [[], [""], [None], ["", ""], [None, None], ['"'], ["a\r"],
                                 [2**63 - 1, -2**63, 2**63, -2**63 - 1, 0, -1, True, False, 10**40],
                                 ["\x80\xff", "\u0800\uffff", "\U00010000\U0010ffff", "a\u07ff,"]])
def test_edge_records(row: list) -> None:
    assert csvrow.encode_row(row) == reference(row, ",")


@needs_c
def test_other_objects_are_written_as_their_str() -> None:
    class Odd:
        def __str__(self) -> str:
            return 'odd, "quoted"'

    row = [Odd(), 1.5, [1, 2], {"a": 1}]
    assert csvrow.encode_row(row) == reference(row, ",")


@needs_c
def test_errors_are_raised_not_written() -> None:
    class Broken:
        def __str__(self) -> str:
            raise RuntimeError("no text")

    with pytest.raises(RuntimeError):
        csvrow.encode_row(["ok", Broken()])
    with pytest.raises(UnicodeEncodeError):
        csvrow.encode_row(["\ud800"])  # a lone surrogate is not UTF-8: never written half-encoded
    with pytest.raises(TypeError):
        csvrow.encode_row(42)
    with pytest.raises(ValueError):
        csvrow.encode_row(["a"], '"')


def test_written_file_reads_back(tmp_path) -> None:
    rows = [["1", "text, with \"quotes\"\nand lines", None, 3, True], ["2", "東京 😀", "", -1, False]]
    for cls in (writers.CsvWriter, writers.TsvWriter):
        path = tmp_path / f"out.{cls.ext}"
        writer = cls(path=path, headers=["id", "text", "empty", "n", "flag"])
        encode = cls.encoder(writer.headers)
        writer.start()
        for row in rows:
            writer.write(encode(None, row))
        writer.finish()
        with path.open(newline="", encoding="utf-8") as fh:
            back = list(csv.reader(fh, delimiter=cls.delimiter))
        assert back[0] == writer.headers
        assert back[1:] == [["" if v is None else str(v) for v in row] for row in rows]


def test_c_encoder_is_built_where_a_compiler_exists() -> None:
    """The fallback is for machines without a compiler, not a silent way to lose the fast path."""
    import os
    import shutil
    import sysconfig

    can_build = shutil.which("cc") and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
    if not can_build:
        pytest.skip("no C compiler or Python headers here")
    assert csvrow is not None, "swath.exporters._csvrow was not built: rerun `pip install -e .` and read its errors"
