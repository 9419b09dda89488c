"""The v2 entity columns from the C helper (platforms/twitter/_jsontext.c) are the Python code's (its reference
and, without a C compiler, the only code): the same texts, the same failures, on generated entities of every shape."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swath.platforms.twitter import exporter_v2

needs_c = pytest.mark.skipif(exporter_v2._entity_texts is None,
                             reason="swath.platforms.twitter._jsontext was not built")

# Strings that stress json's escapes: quotes, backslashes, controls, DEL, non-ASCII, past the BMP, lone surrogates.
special = st.sampled_from(['"', "\\", "\n", "\r", "\t", "\b", "\f", "\x00", "\x1f", "\x7f", "\x80", "é", "東京", "😀",
                           "\ud800", "/", " ", ""])
text = st.lists(st.one_of(special, st.text(max_size=6)), max_size=5).map("".join)
scalar = st.one_of(text, st.none(), st.integers(), st.floats(allow_nan=False), st.booleans())
entity = st.dictionaries(st.sampled_from(["tag", "username", "display_url", "expanded_url", "media_key", "start"]),
                         st.one_of(text, text, scalar), max_size=5)
values = st.one_of(st.lists(entity, max_size=4), st.lists(st.one_of(entity, scalar), max_size=3), st.none(), scalar,
                   st.just([]))
entities = st.dictionaries(st.sampled_from(["hashtags", "cashtags", "mentions", "urls", "annotations", "x"]), values,
                           max_size=6)


def _columns(ents, monkeypatch, with_c: bool):
    monkeypatch.setattr(exporter_v2, "_entity_texts", exporter_v2._entity_texts if with_c else None)
    try:
        return exporter_v2._entity_columns(ents)
    except Exception as exc:  # noqa: BLE001 - compared: both paths must fail alike
        return type(exc)


@needs_c
@settings(max_examples=3000, deadline=None)
@given(entities)
def test_c_and_python_give_the_same_columns(ents):
    with pytest.MonkeyPatch.context() as mp:
        assert _columns(ents, mp, True) == _columns(ents, mp, False)


@needs_c
@pytest.mark.parametrize("ents", [
    {"hashtags": [{"tag": "a"}, {"tag": "b\"\\\n😀\x7f"}], "urls": [{"expanded_url": "u", "media_key": "m",
                                                                      "display_url": "d"}, {}]},
    {"mentions": [{"username": "x"}, {}], "cashtags": [], "urls": None, "annotations": [{"a": 1}]},
])
def test_common_shapes_are_done_in_c(ents):
    texts = exporter_v2._entity_texts(ents)
    assert texts is not None  # the C path took them
    for text in texts.values():
        assert text is None or json.loads(text) is not None  # JSON text, as the Python code writes it


def test_c_helper_is_built_in_twitters_room_where_a_compiler_exists() -> None:
    """setup.py builds it from platforms/twitter/ into swath.platforms.twitter; the Python fallback would hide a
    wrong path there, so where a compiler exists the C path must be the one taken."""
    import os
    import shutil
    import sysconfig

    can_build = shutil.which("cc") and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))
    if not can_build:
        pytest.skip("no C compiler or Python headers here")
    import swath.platforms.twitter._jsontext as built

    assert exporter_v2._entity_texts is built.entity_texts
