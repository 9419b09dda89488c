"""Twitter API v1.1 (search, user timelines, filter/sample streams): items and the twarc json2csv table.

The table is SFM's: twarc's json2csv as SFM's exporter calls it (`get_row(tweet, excel=True)`), so free-text
cells have their line breaks written as spaces and `tweet_type` ranks reply before retweet before quote.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from swath.exporters.dates import twitter_date
from swath.exporters.items import Doc, Item, Source, item_id, obj
from swath.exporters.jsonspan import ANY
from swath.exporters.table import Col, Table, with_inline
from swath.exporters.warc_reader import Response


def _t(item: Item) -> dict[str, Any]:
    tweet: dict[str, Any] = item.item
    return tweet


def _user(key: str) -> Callable[[Item], Any]:
    return lambda item: (item.item.get("user") or {}).get(key)


@with_inline('({fn}(_v) if type(_v := {value}) is not str or "\\n" in _v or "\\r" in _v else _v)')
def one_line(value: object) -> str | None:
    """json2csv's excel cleaning, which SFM asks for: LF as a space, CR dropped, a non-text value empty."""
    if type(value) is not str:
        return None
    return value.replace("\n", " ").replace("\r", "")


def _text(item: Item) -> str | None:
    t = item.item.get("retweeted_status") or item.item  # a retweet's own text is truncated
    if "extended_tweet" in t:
        text: str | None = t["extended_tweet"]["full_text"]
    else:
        text = t.get("full_text") or t.get("text")
    return text


def _coordinates(item: Item) -> str | None:
    c = item.item.get("coordinates")
    if not c:
        return None
    lon, lat = c["coordinates"]  # anything but two numbers is a shape error: the column stays empty
    return f"{lon:f} {lat:f}"


def _hashtags(item: Item) -> str:
    t = item.item.get("retweeted_status") or item.item
    return " ".join(h["text"] for h in (t.get("entities") or {}).get("hashtags", []))


def _media(item: Item) -> str | None:
    t = item.item
    for holder in (t.get("extended_entities") or {}, t.get("entities") or {}):
        if "media" in holder:
            return " ".join(m["media_url_https"] for m in holder["media"])
    return None


def _urls(item: Item) -> str:
    return " ".join(u.get("expanded_url") or "" for u in (item.item.get("entities") or {}).get("urls", []))


def _tweet_type(item: Item) -> str:
    # json2csv's precedence (so SFM's): a reply that quotes is a reply; the keys' presence decides, as there
    t = item.item
    if t.get("in_reply_to_status_id"):
        return "reply"
    if "retweeted_status" in t:
        return "retweet"
    if "quoted_status" in t:
        return "quote"
    return "original"


def _referenced(key: str, user_key: str | None = None) -> Callable[[Item], object]:
    def get(item: Item) -> object:
        t = item.item
        ref = t.get("retweeted_status") or t.get("quoted_status")
        if not ref:
            return None
        return ref["user"][user_key] if user_key else ref[key]

    return get


def _favorite_count(item: Item) -> object:
    return (item.item.get("retweeted_status") or item.item).get("favorite_count")


def _place(item: Item) -> str | None:
    p = item.item.get("place")
    return p["full_name"] if p else None


def _tweet_url(item: Item) -> str:
    return f"https://twitter.com/{item.item['user']['screen_name']}/status/{item.item['id_str']}"


def _user_urls(item: Item) -> str | None:
    u = item.item.get("user")
    if not u:
        return None
    urls = ((u.get("entities") or {}).get("url") or {}).get("urls") or []
    return " ".join(x["expanded_url"] for x in urls if x.get("expanded_url"))


def _parsed_created_at(item: Item) -> str | None:
    return str(item.date) if item.date else None


# The column set of twarc's json2csv (twarc/json2csv.py get_headings/get_row), in its order, with excel=True as SFM.
TABLE = Table(
    name="twitter_v1",
    columns=(
        Col("id", "id_str"),
        Col("tweet_url", _tweet_url),
        Col("created_at", "created_at"),
        Col("parsed_created_at", _parsed_created_at),
        Col("user_screen_name", _user("screen_name")),
        Col("text", _text, one_line),
        Col("tweet_type", _tweet_type),
        Col("coordinates", _coordinates),
        Col("hashtags", _hashtags),
        Col("media", _media),
        Col("urls", _urls),
        Col("favorite_count", _favorite_count),
        Col("in_reply_to_screen_name", "in_reply_to_screen_name"),
        Col("in_reply_to_status_id", "in_reply_to_status_id"),
        Col("in_reply_to_user_id", "in_reply_to_user_id"),
        Col("lang", "lang"),
        Col("place", _place),
        Col("possibly_sensitive", "possibly_sensitive"),
        Col("retweet_count", "retweet_count"),
        Col("retweet_or_quote_id", _referenced("id_str")),
        Col("retweet_or_quote_screen_name", _referenced("", "screen_name")),
        Col("retweet_or_quote_user_id", _referenced("", "id_str")),
        Col("source", "source"),
        Col("user_id", _user("id_str")),
        Col("user_created_at", _user("created_at")),
        Col("user_default_profile_image", _user("default_profile_image")),
        Col("user_description", _user("description"), one_line),
        Col("user_favourites_count", _user("favourites_count")),
        Col("user_followers_count", _user("followers_count")),
        Col("user_friends_count", _user("friends_count")),
        Col("user_listed_count", _user("listed_count")),
        Col("user_location", _user("location"), one_line),
        Col("user_name", _user("name"), one_line),
        Col("user_statuses_count", _user("statuses_count")),
        Col("user_time_zone", _user("time_zone")),
        Col("user_urls", _user_urls),
        Col("user_verified", _user("verified")),
    ),
)


def _tweet_id(value: object) -> str | None:
    """The id of a tweet; None for anything else (streams interleave delete/limit/warning notices)."""
    if type(value) is dict and "user" in value and ("text" in value or "full_text" in value):
        return item_id(value.get("id_str"))
    return None


class TwitterV1(Source):
    table = TABLE
    # v1.1 REST and stream endpoints that return tweets (users/lookup etc. are not items).
    url_markers = (
        "/1.1/search/tweets.json",
        "/1.1/statuses/user_timeline.json",
        "/1.1/statuses/filter.json",
        "/1.1/statuses/sample.json",
        "/1.1/statuses/lookup.json",
        "/1.1/statuses/home_timeline.json",
    )

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        path: tuple[str, ...]
        if isinstance(value, list):
            tweets, path = value, (ANY,)
        elif isinstance(value, dict) and isinstance(value.get("statuses"), list):
            tweets, path = value["statuses"], ("statuses", ANY)
        elif _tweet_id(value) is not None:
            tweets, path = [value], ()
        else:
            return
        if path:
            raws = self.raws(doc, path, tweets, want_raw)
        else:
            raws = [self.whole_raw(doc, want_raw)]
        for tweet, raw in zip(tweets, raws):
            tweet_id = _tweet_id(tweet)
            if tweet_id is None:
                continue
            yield Item(
                type="twitter_v1", id=tweet_id, url=resp.url, item=tweet, harvest_date=resp.date,
                uid=obj(tweet["user"]).get("id_str"), date_text=tweet.get("created_at"), parse_date=twitter_date,
                raw=raw,
            )
