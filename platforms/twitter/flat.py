"""json_full of Twitter API v2: each tweet flattened as twarc's `ensure_flattened` does.

SFM 3.0's json_full writes twarc-flattened tweets (its v2 WARC iterators call `ensure_flattened`), and `twarc2 csv`
fills every column from them: the page's `includes` are inlined into each tweet (`author`, `in_reply_to_user`,
`media`, `poll`, `geo`, mentioned users, referenced tweets, themselves expanded), a stream line's
`matching_rules` go with its tweet, and `__twarc` says where and when swath fetched it, as twarc records it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import orjson

from swath.exporters.items import objs

# What flatten() looks up in `includes`, by which key; anything else there is left out of a retried flatten.
_INCLUDE_KEYS = {"users": "id", "tweets": "id", "media": "media_key", "polls": "id", "places": "id"}
# What a page of an odd shape raises inside flatten() (a list where an object was expected, ids that are not
# text, a nesting deeper than Python's recursion limit).
_FLATTEN_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError, RecursionError)


def twarc_meta(*, url: str, retrieved: dt.datetime, version: str) -> dict[str, str]:
    """The `__twarc` object twarc adds to each response it writes (the keys `twarc2 csv` has columns for)."""
    return {"url": url, "version": version, "retrieved_at": retrieved.isoformat()}


def flattened(body: bytes, *, meta: dict[str, str]) -> list[Any]:
    """The flattened tweets of one page or stream line, one per entry of its `data` (a single tweet gives one).

    The body is parsed afresh (flatten edits what it is given; the caller's parsed page stays as it was). A page
    whose `includes` defeat flatten is retried with only well-formed includes, tweet by tweet; a tweet that
    still cannot be expanded is written as the API sent it.
    """
    page = orjson.loads(body)
    data = page.get("data")
    count = len(data) if isinstance(data, list) else 1
    page["__twarc"] = meta
    try:
        tweets = _flatten(page)
        if len(tweets) == count:
            return tweets
    except _FLATTEN_ERRORS:
        pass
    return _one_by_one(orjson.loads(body), meta)


def _flatten(page: dict[str, Any]) -> list[Any]:
    # imported here: twarc is Twitter's client library, loaded when an export flattens, not when a type is looked up
    from twarc.expansions import flatten

    flat: list[Any] = flatten(page)
    return flat


def _one_by_one(page: dict[str, Any], meta: dict[str, str]) -> list[Any]:
    """flatten() per tweet on the well-formed includes only (fresh copies each time: flatten edits them)."""
    data = page.get("data")
    tweets = data if isinstance(data, list) else [data]
    found = page.get("includes")
    includes: dict[str, Any] = found if isinstance(found, dict) else {}
    kept = orjson.dumps({kind: [o for o in objs(includes.get(kind)) if type(o.get(key)) is str]
                         for kind, key in _INCLUDE_KEYS.items()})
    out = []
    for tweet in tweets:
        if type(tweet) is dict:
            one = {"data": orjson.loads(orjson.dumps(tweet)), "includes": orjson.loads(kept), "__twarc": meta}
            if "matching_rules" in page:
                one["matching_rules"] = page["matching_rules"]
            try:
                tweet = _flatten(one)[0]
            except _FLATTEN_ERRORS:
                pass  # written as the API sent it
        out.append(tweet)
    return out
