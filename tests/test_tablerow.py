"""The C row programs (exporters/_tablerow.c) and Twitter v2's C values (platforms/twitter/_jsontext.c: prepare,
json_list) write the same CSV bytes as the Python code, their reference and, without a C compiler, the only code.

Both paths run over generated values of every shape (odd unicode, lone surrogates, missing fields, lists where
objects belong, non-object entities, ints past 64 bits, NaN, nulls): a v2 page parsed into items, and a generic
table over arbitrary JSON, then compared byte for byte (or by the exception both raise).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swath.exporters import table as table_module
from swath.exporters.items import Doc, Item
from swath.exporters.table import Col, Table, constant, json_list, no_newlines, python_row
from swath.exporters.warc_reader import Response
from swath.exporters.writers import _python_encode_row
from swath.platforms.twitter import exporter_v2

needs_c = pytest.mark.skipif(table_module._tablerow is None or exporter_v2._entity_texts is None,
                             reason="the C helpers were not built")

encode = _python_encode_row(",")  # the csv module: the reference encoder, so only the rows are compared

special = st.sampled_from(['"', "\\", "\n", "\r", "\r\n", "\t", "\x00", "\x7f", "é", "東京", "😀", "\ud800", "\udfff",
                           ",", " ", "", "retweeted", "quoted", "replied_to", "1", "2"])
text = st.lists(st.one_of(special, st.text(max_size=5)), max_size=4).map("".join)
# (orjson parses no int past 64 bits nor inf/NaN; Python-made values may hold them, and rows must agree on them too)
number = st.one_of(st.integers(), st.integers(min_value=2**63, max_value=2**80), st.integers(max_value=-2**64),
                   st.floats())
huge = st.just(5000).map(lambda n: 10**n)  # past str()'s digit limit: both paths raise the same ValueError
scalar = st.one_of(text, st.none(), number, st.booleans())
json_value = st.recursive(scalar, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(text, inner, max_size=3)), max_leaves=8)
# ids that meet: tweets refer to users and tweets of the same includes
ids = st.sampled_from(["1", "2", "3"])
some = st.one_of(ids, json_value)


def _entities() -> st.SearchStrategy[Any]:
    entity = st.dictionaries(st.sampled_from(["tag", "username", "expanded_url", "display_url", "media_key", "x"]),
                             st.one_of(text, text, scalar), max_size=4)
    kind = st.one_of(st.lists(entity, max_size=3), st.lists(st.one_of(entity, scalar), max_size=2), scalar,
                     json_value)
    return st.one_of(st.dictionaries(st.sampled_from(["hashtags", "cashtags", "mentions", "urls", "annotations"]),
                                     kind, max_size=5), json_value)


def _obj(fields: dict[str, st.SearchStrategy[Any]], **required: st.SearchStrategy[Any]
         ) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of the fields, the `required` ones mostly present (so ids meet across includes)."""
    return st.one_of(st.fixed_dictionaries(required, optional=fields), st.fixed_dictionaries(required, optional=fields),
                     st.fixed_dictionaries({}, optional={**fields, **required}))


user = _obj({"username": some, "name": some, "description": some, "url": some,
             "entities": st.one_of(_obj({"description": _entities(), "url": _obj({"urls": st.one_of(
                 st.lists(_obj({"expanded_url": some}), max_size=3), json_value)})}), json_value),
             "public_metrics": st.one_of(_obj({"followers_count": some}), json_value), "withheld": json_value},
            id=ids)
reference = _obj({}, type=st.one_of(st.sampled_from(["retweeted", "quoted", "replied_to"]), json_value), id=some)
tweet = _obj({"text": some, "created_at": some,
              "referenced_tweets": st.one_of(st.lists(st.one_of(reference, reference, scalar), max_size=3),
                                             json_value),
              "entities": _entities(), "attachments": st.one_of(_obj({"media_keys": some, "poll_ids": some}),
                                                                 json_value),
              "geo": st.one_of(_obj({"place_id": some, "coordinates": some}), json_value),
              "public_metrics": st.one_of(_obj({"like_count": some}), json_value), "context_annotations": some,
              "edit_history_tweet_ids": some, "matching_rules": some, "withheld": json_value},
             id=st.one_of(ids, ids, json_value), author_id=some)
includes = st.one_of(_obj({"media": st.lists(json_value, max_size=2),
                           "polls": st.lists(_obj({"options": some}, id=ids), max_size=2),
                           "places": st.lists(_obj({"full_name": some, "geo": json_value}, id=ids), max_size=2)},
                          users=st.one_of(st.lists(st.one_of(user, user, scalar), max_size=4), json_value),
                          tweets=st.lists(tweet, max_size=3)),
                     json_value)
page = st.fixed_dictionaries({"data": st.lists(st.one_of(tweet.map(lambda t: {"text": "t", **t}), tweet),
                                               min_size=1, max_size=3)},
                             optional={"matching_rules": json_value}).flatmap(
    lambda p: st.one_of(st.just(p), includes.map(lambda inc: {**p, "includes": inc}),
                        includes.map(lambda inc: {**p, "includes": inc})))

# Pages of the API's own shapes with hostile values, so the C prepare takes them itself (refs, authors, polls...).
wf_user = st.fixed_dictionaries({"id": ids, "username": text, "name": text, "description": text}, optional={
    "url": st.one_of(text, st.none()), "public_metrics": st.fixed_dictionaries({"followers_count": number}),
    "entities": st.fixed_dictionaries({}, optional={
        "description": st.fixed_dictionaries({}, optional={
            k: st.lists(st.fixed_dictionaries({}, optional={"tag": text, "username": text}), max_size=2)
            for k in ("hashtags", "mentions", "cashtags")}),
        "url": st.fixed_dictionaries({"urls": st.lists(st.fixed_dictionaries(
            {}, optional={"expanded_url": st.one_of(text, st.none())}), max_size=2)})})})
wf_tweet = st.fixed_dictionaries({"id": ids, "text": text, "author_id": ids}, optional={
    "referenced_tweets": st.lists(st.fixed_dictionaries({"type": st.sampled_from(["retweeted", "quoted",
                                                                                   "replied_to", "x"]),
                                                         "id": ids}), max_size=3),
    "entities": st.fixed_dictionaries({}, optional={
        "hashtags": st.lists(st.fixed_dictionaries({"tag": text}), max_size=2),
        "urls": st.lists(st.fixed_dictionaries({"expanded_url": text}, optional={"media_key": text,
                                                                                 "display_url": text}),
                         max_size=2),
        "annotations": st.lists(json_value, max_size=2)}),
    "attachments": st.fixed_dictionaries({}, optional={"poll_ids": st.lists(ids, max_size=2),
                                                       "media_keys": st.lists(ids, max_size=2)}),
    "geo": st.fixed_dictionaries({"place_id": ids}), "context_annotations": st.lists(json_value, max_size=2),
    "public_metrics": st.fixed_dictionaries({"like_count": number})})
wf_page = st.fixed_dictionaries({"data": st.lists(wf_tweet, min_size=1, max_size=4), "includes": st.fixed_dictionaries({
    "users": st.lists(wf_user, max_size=4), "tweets": st.lists(wf_tweet, max_size=3),
    "polls": st.lists(st.fixed_dictionaries({"id": ids, "options": json_value}), max_size=2),
    "places": st.lists(st.fixed_dictionaries({"id": ids, "full_name": text}), max_size=2),
    "media": st.lists(st.fixed_dictionaries({"media_key": ids, "url": text}), max_size=2)})})

RESPONSE = Response(url="https://api.twitter.com/2/tweets/search/recent", date=dt.datetime(2024, 1, 2, 3, 4, 5,
                    tzinfo=dt.UTC), body=b"", warc="w.warc.gz", offset=0)


def _items(value: Any) -> list[Item]:
    """The page's items, as the source makes them from a parsed body (a fresh copy: prepare writes to items)."""
    doc = Doc(value, b"", True)
    return list(exporter_v2.TwitterV2().doc_items(doc, RESPONSE, want_raw=False))


def _outcome(row_fn: Any, item: Item) -> bytes | type[BaseException]:
    try:
        return encode(row_fn(item))
    except Exception as exc:  # noqa: BLE001 - compared: both paths must fail alike
        return type(exc)


def _python_v2_rows(value: Any, monkeypatch: pytest.MonkeyPatch) -> list[bytes | type[BaseException]]:
    """The Python path whole: the generated row function, _Prepared, json_list and _entity_columns in Python."""
    row = python_row(exporter_v2.TABLE.columns, exporter_v2._prepare_py)
    with monkeypatch.context() as mp:
        mp.setattr(exporter_v2, "_json_text", exporter_v2.json_list)
        mp.setattr(exporter_v2, "_entity_texts", None)
        return [_outcome(row, item) for item in _items(value)]


def _copy(value: Any) -> Any:
    """A deep copy that keeps what JSON cannot hold (big ints, NaN, lone surrogates) as it is."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value


@needs_c
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.one_of(page, wf_page))
def test_v2_rows_from_c_are_the_python_rows_byte_for_byte(value):
    c_rows = [_outcome(exporter_v2.TABLE.row, item) for item in _items(_copy(value))]
    with pytest.MonkeyPatch.context() as mp:
        assert c_rows == _python_v2_rows(_copy(value), mp)


@needs_c
def test_v2_rows_of_the_bench_generator_take_the_c_path_and_match(monkeypatch):
    """Realistic pages (bench/gen_tweets.py's shapes: retweets, quotes, replies, polls, places, media) through
    the C prepare itself, not its fallback, with the same bytes."""
    users = [{"id": str(n), "username": f"u{n}", "name": "N\r\n😀", "description": "d #x",
              "entities": {"description": {"hashtags": [{"tag": "x"}]}, "url": {"urls": [{"expanded_url": "e"}]}},
              "public_metrics": {"followers_count": n}} for n in range(3)]
    tweets = [{"id": str(10 + n), "text": f"t{n}\n", "author_id": str(n % 3), "created_at": "2023-01-01T00:00:00Z",
               "entities": {"hashtags": [{"tag": "a"}], "urls": [{"expanded_url": "x", "media_key": "m",
                                                                  "display_url": "y"}], "annotations": [{"n": 1.5}]},
               "referenced_tweets": [{"type": kind, "id": "11"} for kind in ("retweeted", "quoted", "replied_to")
                                     [: n % 4]],
               "attachments": {"poll_ids": ["p"], "media_keys": ["m", 3]}, "geo": {"place_id": "pl"},
               "context_annotations": [{"domain": {"id": "1", "name": "é"}}], "public_metrics": {"like_count": n}}
              for n in range(8)]
    value = {"data": tweets, "includes": {"users": users, "tweets": tweets[:3], "media": [{"media_key": "m"}],
                                          "polls": [{"id": "p", "options": [{"label": "a"}]}],
                                          "places": [{"id": "pl", "full_name": "P\nQ"}]}}
    items = _items(_copy(value))
    c_rows = [encode(exporter_v2.TABLE.row(item)) for item in items]
    assert all(type(item.scratch).__module__ == "swath.platforms.twitter._jsontext" for item in items)
    assert c_rows == _python_v2_rows(_copy(value), monkeypatch)
    # the rows hold the values, not only empties
    assert b'"[""#a""]"' in c_rows[0] and b"N\\n\xf0\x9f\x98\x80" in c_rows[0]


@needs_c
@settings(max_examples=1000, deadline=None)
@given(st.one_of(json_value, huge, st.lists(st.one_of(huge, json_value), max_size=2)))
def test_json_list_in_c_is_json_dumps(value):
    from swath.platforms.twitter import _jsontext  # type: ignore[attr-defined]

    def outcome(fn: Any) -> Any:
        try:
            return fn(value)
        except Exception as exc:  # noqa: BLE001 - compared: both paths must fail alike
            return type(exc)

    assert outcome(_jsontext.json_list) == outcome(exporter_v2.json_list)


# A generic table: every kind of column and transform compile_row knows, over arbitrary JSON.
class _Prepared:
    __slots__ = ("x", "y")

    def __init__(self, item: Item) -> None:
        t = item.item
        if type(t) is dict and t.get("boom") == 1:
            raise TypeError("a prepare that fails for a shape")  # a SHAPE_ERROR: the slow path
        self.x = t.get("a") if type(t) is dict else None
        self.y = t


def _get_b(item: Item) -> Any:
    return item.item["b"]  # KeyError/TypeError for other shapes: the slow path, column by column


GENERIC = (
    Col("a", "a"), Col("a.b", "a.b"), Col("a.b.c", "a.b.c", no_newlines), Col("a.d", "a.d", json_list),
    Col("c.d.e", "c.d.e"), Col("b", "b", no_newlines), Col("px", "$x"), Col("px.b", "$x.b", json_list),
    Col("py.a.b", "$y.a.b"), Col("call", _get_b), Col("const", constant("k")), Col("url", "@url"),
    Col("v2json", "a", exporter_v2.json_list), Col("str", "c", lambda v: str(v)[:5]),
)
paths = st.sampled_from(["a", "b", "c", "d", "e", "boom"])
nested = st.recursive(st.one_of(scalar, huge), lambda inner: st.one_of(st.lists(inner, max_size=2),
                                                     st.dictionaries(paths, inner, max_size=4)), max_leaves=10)


@needs_c
@settings(max_examples=1500, deadline=None)
@given(st.one_of(st.dictionaries(paths, nested, max_size=5), nested))
def test_generic_row_program_is_the_generated_function(value):
    table = Table(name="generic", columns=GENERIC, prepare=_Prepared)
    reference = python_row(GENERIC, _Prepared)

    def item() -> Item:
        return Item(type="generic", id="1", url="u\n", item=_copy(value), harvest_date=RESPONSE.date, uid=None,
                    date_text=None, parse_date=lambda v: None)

    assert type(table.row).__name__ == "Program"
    assert _outcome(table.row, item()) == _outcome(reference, item())


def test_without_the_extension_the_row_is_the_generated_function(monkeypatch):
    monkeypatch.setattr(table_module, "_tablerow", None)
    table = Table(name="generic", columns=GENERIC, prepare=_Prepared)
    assert table.row.__name__ == "fast"


def test_a_value_nested_past_the_recursion_limit_empties_its_cell_not_the_export():
    """orjson parses 1,024 levels; json.dumps recursed out at ~1,000 and the RecursionError ended the whole
    export. Now the slow path leaves that one cell empty, as for any other shape the column cannot read."""
    import orjson

    deep = b"[" * 1000 + b"1" + b"]" * 1000
    page = orjson.loads(b'{"data": [{"id": "1", "text": "t", "author_id": "2", "edit_history_tweet_ids": ' + deep
                        + b'}], "includes": {"users": [{"id": "2", "username": "u"}]}}')
    (item,) = _items(page)
    row = exporter_v2.TABLE.row(item)
    names = [c.name for c in exporter_v2.TABLE.columns]
    assert row[names.index("edit_history_tweet_ids")] is None
    assert row[names.index("id")] == "1" and row[names.index("text")] == "t"


def test_json_list_tells_non_finite_floats_apart():
    """orjson writes NaN and ±Infinity as null, so json_list's cache (keyed by orjson's bytes) gave the text of
    whichever came first to all of them (hypothesis found it: -Infinity for Infinity)."""
    texts = [exporter_v2.json_list(v) for v in ([float("-inf")], [float("inf")], [float("nan")], [None])]
    assert texts == ["[-Infinity]", "[Infinity]", "[NaN]", "[null]"]
