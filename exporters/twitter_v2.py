"""Twitter API v2 (search recent/all, user tweets, filtered/sample streams): items and the twarc-csv table.

Columns follow twarc-csv's DEFAULT_TWEET_COLUMNS with its defaults: expansions resolved from the
response's `includes`, retweets merged (text, entities, metrics of the original), entities shortened
(#tag, @user, $cash, expanded urls), lists as JSON, newlines escaped. `__twarc.*` come from the WARC:
retrieved_at = harvest date, url = the API URL.
"""

from __future__ import annotations

from typing import Any, Iterator

from exporters.dates import iso_date
from exporters.items import Doc, Item, Source
from exporters.jsonspan import ANY
from exporters.table import Col, Table, dig, json_list, no_newlines
from exporters.warc_reader import Response

VERSION = "swath"  # what __twarc.version says: these rows were not made by twarc


class Includes:
    """Lookups of one response's `includes`, built on first use (json_full/dehydrate never need them)."""

    __slots__ = ("_raw", "_built", "matching_rules")
    _KEYS = {"users": "id", "tweets": "id", "media": "media_key", "polls": "id", "places": "id"}

    def __init__(self, includes: dict[str, Any] | None, matching_rules: Any = None) -> None:
        self._raw = includes or {}
        self._built: dict[str, dict[str, Any]] = {}
        self.matching_rules = matching_rules

    def get(self, name: str) -> dict[str, Any]:
        built = self._built.get(name)
        if built is None:
            key = self._KEYS[name]
            built = self._built[name] = {o[key]: o for o in self._raw.get(name, ()) if isinstance(o, dict) and key in o}
        return built

    users = property(lambda self: self.get("users"))
    tweets = property(lambda self: self.get("tweets"))
    media = property(lambda self: self.get("media"))
    polls = property(lambda self: self.get("polls"))
    places = property(lambda self: self.get("places"))


class _Prepared:
    """Per-tweet values several columns share."""

    __slots__ = ("refs", "merged", "author", "poll", "place", "inc")

    def __init__(self, item: Item) -> None:
        t = item.item
        inc: Includes = item.context or Includes(None)
        self.inc = inc
        self.refs = {r.get("type"): r.get("id") for r in t.get("referenced_tweets") or ()}
        rt = inc.tweets.get(self.refs["retweeted"]) if "retweeted" in self.refs else None
        self.merged = rt or t  # twarc-csv merges a retweet's text/entities/metrics from the original
        self.author = inc.users.get(t.get("author_id")) or {}
        poll_ids = (t.get("attachments") or {}).get("poll_ids")
        self.poll = inc.polls.get(poll_ids[0]) or {} if poll_ids else {}
        place_id = (t.get("geo") or {}).get("place_id")
        self.place = inc.places.get(place_id) or {} if place_id else {}


def _prepare(item: Item) -> None:
    item.scratch = _Prepared(item)


def _p(item: Item) -> _Prepared:
    return item.scratch


def _ref(kind: str):
    return lambda item: _p(item).refs.get(kind)


def _ref_author_id(kind: str):
    def get(item: Item) -> Any:
        p = _p(item)
        ref = p.inc.tweets.get(p.refs.get(kind)) if kind in p.refs else None
        return ref.get("author_id") if ref else None

    return get


def _ref_username(kind: str):
    author_id = _ref_author_id(kind)

    def get(item: Item) -> Any:
        uid = author_id(item)
        return (_p(item).inc.users.get(uid) or {}).get("username") if uid else None

    return get


def _merged(*keys: str):
    return lambda item: dig(_p(item).merged, keys)


def _entities(kind: str, source: str = "tweet"):
    """twarc-csv's _process_entities: #tag, @user, $cash, expanded (or media display) urls."""

    def get(item: Item) -> str | None:
        p = _p(item)
        if source == "tweet":
            ents = p.merged.get("entities")
        else:
            ents = ((p.author.get("entities") or {}).get("description"))
        if not ents or kind not in ents:
            return None
        values = ents[kind]
        if kind == "hashtags":
            out = ["#" + e.get("tag", "") for e in values]
        elif kind == "cashtags":
            out = ["$" + e.get("tag", "") for e in values]
        elif kind == "mentions":
            out = ["@" + e.get("username", "") for e in values]
        elif kind == "urls":
            out = [e.get("display_url") if "media_key" in e else e.get("expanded_url") for e in values]
        else:
            out = values
        return json_list(out)

    return get


def _media(item: Item) -> str | None:
    keys = (_p(item).merged.get("attachments") or {}).get("media_keys")
    if not keys:
        return None
    media = _p(item).inc.media
    return json_list([media.get(k, {"media_key": k}) for k in keys])


def _author(*keys: str):
    return lambda item: dig(_p(item).author, keys)


def _author_url(item: Item) -> Any:
    author = _p(item).author
    urls = ((author.get("entities") or {}).get("url") or {}).get("urls")
    if urls:
        return urls[-1].get("expanded_url")
    return author.get("url")


def _poll(key: str):
    return lambda item: _p(item).poll.get(key)


def _geo_place(*keys: str):
    return lambda item: dig(_p(item).place, keys)


def _json(get):
    return lambda item: json_list(get(item))


def _matching_rules(item: Item) -> Any:
    rules = item.item.get("matching_rules") or _p(item).inc.matching_rules
    return json_list(rules) if rules else None


TABLE = Table(
    name="twitter_v2",
    prepare=_prepare,
    columns=(
        Col("id", "id"),
        Col("conversation_id", "conversation_id"),
        Col("referenced_tweets.replied_to.id", _ref("replied_to")),
        Col("referenced_tweets.retweeted.id", _ref("retweeted")),
        Col("referenced_tweets.quoted.id", _ref("quoted")),
        Col("author_id", "author_id"),
        Col("in_reply_to_user_id", "in_reply_to_user_id"),
        Col("in_reply_to_username", _ref_username("replied_to")),
        Col("retweeted_user_id", _ref_author_id("retweeted")),
        Col("retweeted_username", _ref_username("retweeted")),
        Col("quoted_user_id", _ref_author_id("quoted")),
        Col("quoted_username", _ref_username("quoted")),
        Col("created_at", "created_at"),
        Col("text", _merged("text"), no_newlines),
        Col("lang", "lang"),
        Col("source", "source"),
        Col("public_metrics.impression_count", _merged("public_metrics", "impression_count")),
        Col("public_metrics.reply_count", _merged("public_metrics", "reply_count")),
        Col("public_metrics.retweet_count", _merged("public_metrics", "retweet_count")),
        Col("public_metrics.quote_count", _merged("public_metrics", "quote_count")),
        Col("public_metrics.like_count", _merged("public_metrics", "like_count")),
        Col("reply_settings", "reply_settings"),
        Col("edit_history_tweet_ids", "edit_history_tweet_ids", json_list),
        Col("edit_controls.edits_remaining", "edit_controls.edits_remaining"),
        Col("edit_controls.editable_until", "edit_controls.editable_until"),
        Col("edit_controls.is_edit_eligible", "edit_controls.is_edit_eligible"),
        Col("possibly_sensitive", "possibly_sensitive"),
        Col("withheld.scope", "withheld.scope"),
        Col("withheld.copyright", "withheld.copyright"),
        Col("withheld.country_codes", "withheld.country_codes", json_list),
        Col("entities.annotations", _entities("annotations")),
        Col("entities.cashtags", _entities("cashtags")),
        Col("entities.hashtags", _entities("hashtags")),
        Col("entities.mentions", _entities("mentions")),
        Col("entities.urls", _entities("urls")),
        Col("context_annotations", _json(_merged("context_annotations"))),
        Col("attachments.media", _media),
        Col("attachments.media_keys", _json(_merged("attachments", "media_keys"))),
        Col("attachments.poll.duration_minutes", _poll("duration_minutes")),
        Col("attachments.poll.end_datetime", _poll("end_datetime")),
        Col("attachments.poll.id", _poll("id")),
        Col("attachments.poll.options", _json(_poll("options"))),
        Col("attachments.poll.voting_status", _poll("voting_status")),
        Col("attachments.poll_ids", "attachments.poll_ids", json_list),
        Col("author.id", _author("id")),
        Col("author.created_at", _author("created_at")),
        Col("author.username", _author("username")),
        Col("author.name", _author("name"), no_newlines),
        Col("author.description", _author("description"), no_newlines),
        Col("author.entities.description.cashtags", _entities("cashtags", "author")),
        Col("author.entities.description.hashtags", _entities("hashtags", "author")),
        Col("author.entities.description.mentions", _entities("mentions", "author")),
        Col("author.entities.description.urls", _entities("urls", "author")),
        Col("author.url", _author_url),
        Col("author.location", _author("location"), no_newlines),
        Col("author.pinned_tweet_id", _author("pinned_tweet_id")),
        Col("author.profile_image_url", _author("profile_image_url")),
        Col("author.protected", _author("protected")),
        Col("author.public_metrics.followers_count", _author("public_metrics", "followers_count")),
        Col("author.public_metrics.following_count", _author("public_metrics", "following_count")),
        Col("author.public_metrics.listed_count", _author("public_metrics", "listed_count")),
        Col("author.public_metrics.tweet_count", _author("public_metrics", "tweet_count")),
        Col("author.verified", _author("verified")),
        Col("author.withheld.scope", _author("withheld", "scope")),
        Col("author.withheld.copyright", _author("withheld", "copyright")),
        Col("author.withheld.country_codes", _json(_author("withheld", "country_codes"))),
        Col("geo.coordinates.coordinates", "geo.coordinates.coordinates", json_list),
        Col("geo.coordinates.type", "geo.coordinates.type"),
        Col("geo.country", _geo_place("country")),
        Col("geo.country_code", _geo_place("country_code")),
        Col("geo.full_name", _geo_place("full_name")),
        Col("geo.geo.bbox", _json(_geo_place("geo", "bbox"))),
        Col("geo.geo.type", _geo_place("geo", "type")),
        Col("geo.id", _geo_place("id")),
        Col("geo.name", _geo_place("name")),
        Col("geo.place_id", "geo.place_id"),
        Col("geo.place_type", _geo_place("place_type")),
        Col("matching_rules", _matching_rules),
        Col("__twarc.retrieved_at", lambda item: item.harvest_date.isoformat()),
        Col("__twarc.url", lambda item: item.url),
        Col("__twarc.version", lambda item: VERSION),
    ),
)


def _is_tweet(obj: Any) -> bool:
    return isinstance(obj, dict) and "id" in obj and "text" in obj


class TwitterV2(Source):
    table = TABLE
    url_markers = (
        "api.twitter.com/2/tweets/search/",  # recent, all, stream
        "api.twitter.com/2/tweets/sample",
        "api.twitter.com/2/users/",  # users/:id/tweets, /mentions (only responses with tweets yield items)
        "api.x.com/2/",
    )

    def accepts(self, url: str) -> bool:
        if not super().accepts(url):
            return False
        return "/2/users/" not in url or "/tweets" in url or "/mentions" in url

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        if not isinstance(value, dict):
            return
        data = value.get("data")
        context = Includes(value.get("includes"), value.get("matching_rules"))
        if isinstance(data, list):
            tweets = data
            raws = self.raws(doc, ("data", ANY), len(tweets), want_raw)
        elif _is_tweet(data):  # a stream line: the line itself is the unit the API sent
            tweets, raws = [data], [doc.body if want_raw else None]
        else:
            return
        for tweet, raw in zip(tweets, raws):
            if not _is_tweet(tweet):
                continue
            yield Item(
                type="twitter_v2", id=tweet["id"], url=resp.url, item=tweet, harvest_date=resp.date,
                uid=tweet.get("author_id"), date_text=tweet.get("created_at"), parse_date=iso_date,
                raw=raw, context=context,
            )
