"""Twitter API v2 (search recent/all, user tweets, filtered/sample streams): items and the twarc-csv table.

The table is SFM 3.0's: twarc-csv 0.7.1's DEFAULT_TWEET_COLUMNS in its order (83), then what later twarc-csv added
(0.7.2's `public_metrics.bookmark_count`), so positional scripts written for SFM's exports keep working. Cells as
twarc-csv's defaults write them: expansions resolved from the response's `includes`, retweets merged (text,
entities, metrics of the original), entities shortened (#tag, @user, $cash, expanded urls), lists and objects as
`json.dumps` writes them, CR dropped and LF written as `\\n` in free-text cells (twarc-csv does it in every
text cell; ids, dates, names of fixed forms and URLs hold no line breaks). `__twarc.*` come from the WARC:
retrieved_at = harvest date, url = the API URL (SFM leaves them empty: its WARCs hold no `__twarc`).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import orjson

from swath.exporters.dates import iso_date
from swath.exporters.items import Doc, Item, Source, item_id, obj, objs
from swath.exporters.jsonspan import scan_spans
from swath.exporters.table import NONE_STAYS_NONE, Col, Table, constant, no_newlines, with_inline
from swath.exporters.warc_reader import Response
from swath.platforms.twitter.flat import flattened, twarc_meta

VERSION = "swath"  # what __twarc.version says: these rows were not made by twarc


def _no_default(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not JSON")  # parsed JSON holds none: json.dumps would raise too


# json.dumps' own C encoder with its defaults, made once: json.dumps builds one per call, which cost more than
# the encoding of these small lists (pure-Python json has no such encoder: json.dumps then)
_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_chunks = _make_encoder(None, _no_default, json.encoder.encode_basestring_ascii, None, ": ", ", ", False, False,
                        True) if _make_encoder is not None else None


_CACHE_SIZE = 4096
_spaced: dict[bytes, str] = {}  # compact JSON -> twarc-csv's text of the same value (see json_list)


def _dumps(value: Any) -> str:
    return "".join(_chunks(value, 0)) if _chunks is not None else json.dumps(value)


# json.dumps' own string encoder (C when built): a list of strings is its items joined, without the encoder's
# per-call set-up, which costs more than the encoding of these short lists (tags, mentions, urls, ids)
_quoted = json.encoder.encode_basestring_ascii


def _dumps_strs(values: list[Any]) -> str:
    """json.dumps of a list whose first item is a string."""
    try:
        return "[" + ", ".join(map(_quoted, values)) + "]"
    except TypeError:  # not all strings (None, numbers...): json.dumps writes them
        return _dumps(values)


@with_inline(NONE_STAYS_NONE)
def json_list(value: Any) -> str | None:
    """Lists and objects as twarc-csv writes them (`json.dumps` defaults: spaced, \\u-escaped), None stays empty.

    Objects (context annotations, media, rules) repeat across tweets and cost json's encoder several times what
    orjson takes, so their text is kept by their orjson bytes: equal bytes are equal parsed JSON values.
    """
    if value is None:
        return None
    if type(value) is list and (not value or type(value[0]) is not dict):
        # tags, mentions, ids: cheaper to encode than to look up
        return _dumps_strs(value) if value and type(value[0]) is str else _dumps(value)
    try:
        key = orjson.dumps(value)
    except orjson.JSONEncodeError:  # an int past 64 bits
        return _dumps(value)
    if b"null" in key:  # orjson writes NaN and ±Infinity as null too: such keys do not tell values apart
        return _dumps(value)
    text = _spaced.get(key)
    if text is None:
        if len(_spaced) >= _CACHE_SIZE:
            _spaced.clear()
        text = _spaced[key] = _dumps(value)
    return text


_entity_texts: Callable[[dict[str, Any]], dict[str, str | None] | None] | None
_json_text: Callable[[Any], str | None]  # json_list, in C when built
try:  # platforms/twitter/_jsontext.c: the same texts for the common shapes (the build goes on without a C compiler)
    import swath.platforms.twitter._jsontext as _jsontext_extension

    _entity_texts = _jsontext_extension.entity_texts
    _json_text = _jsontext_extension.json_list  # json_list's shapes it leaves (deep, odd keys...) go to json_list
    vars(json_list)["native"] = _json_text  # what table.py's C row program calls for this transform
except ImportError:
    _entity_texts = None
    _json_text = json_list


class Includes:
    """Lookups of one response's `includes`, built on first use (json_full/dehydrate never need them)."""

    __slots__ = ("_raw", "_built", "matching_rules", "_authors")
    _KEYS = {"users": "id", "tweets": "id", "media": "media_key", "polls": "id", "places": "id"}

    def __init__(self, includes: dict[str, Any] | None, matching_rules: Any = None) -> None:
        self._raw = includes if isinstance(includes, dict) else {}
        self._built: dict[str, dict[str, Any]] = {}
        self.matching_rules = matching_rules
        self._authors: dict[int, tuple[Any, Any, Any]] = {}

    def author_values(self, author: dict[str, Any]) -> tuple[Any, Any, Any]:
        """(description entities, url entities' urls, url) of an author, once per author and page:
        a page's tweets share few authors, and these cost JSON encoding."""
        key = id(author)  # the includes' own object, alive as long as this page
        values = self._authors.get(key)
        if values is None:
            ents = obj(author.get("entities"))
            urls = objs(obj(ents.get("url")).get("urls"))
            values = self._authors[key] = (
                _entity_columns(ents.get("description")),
                _json_text([u.get("expanded_url") for u in urls]) if urls else None,
                urls[-1].get("expanded_url") if urls else author.get("url"),
            )
        return values

    def get(self, name: str) -> dict[str, Any]:
        built = self._built.get(name)
        if built is None:
            key = self._KEYS[name]
            built = self._built[name] = {o[key]: o for o in objs(self._raw.get(name)) if type(o.get(key)) is str}
        return built

    users = property(lambda self: self.get("users"))
    tweets = property(lambda self: self.get("tweets"))
    media = property(lambda self: self.get("media"))
    polls = property(lambda self: self.get("polls"))
    places = property(lambda self: self.get("places"))


class _Prepared:
    """Per-tweet values several columns share; "$name..." column paths read these attributes."""

    __slots__ = ("refs", "merged", "author", "poll", "place", "inc", "ref_author", "ref_username", "ents",
                 "author_ents", "author_urls", "author_url")

    def __init__(self, item: Item) -> None:
        t = item.item
        inc: Includes = item.context or Includes(None)
        self.inc = inc
        refs = objs(t.get("referenced_tweets"))
        self.refs = {r.get("type"): r.get("id") for r in refs} if refs else _NONE
        self.ref_author = self.ref_username = _NONE
        self.merged = t
        if refs:  # replied_to / retweeted / quoted: the referenced tweet's author, from includes
            # keyed by the referenced tweets' "type" as the API sent it (JSON: any value, a str in practice)
            ref_author: dict[Any, Any] = {}
            ref_username: dict[Any, Any] = {}
            for kind, rid in self.refs.items():
                ref = inc.tweets.get(rid) if type(rid) is str else None
                if ref is not None:
                    ref_author[kind] = ref.get("author_id")
                    ref_username[kind] = obj(inc.users.get(ref.get("author_id"))).get("username")
                    if kind == "retweeted":
                        self.merged = ref  # twarc-csv merges a retweet's text/entities/metrics from the original
            self.ref_author, self.ref_username = ref_author, ref_username
        author_id = t.get("author_id")
        self.author = author = inc.users.get(author_id) or _NONE if type(author_id) is str else _NONE
        self.ents = _entity_columns(self.merged.get("entities"))
        self.author_ents, self.author_urls, self.author_url = inc.author_values(author)
        poll_ids = obj(t.get("attachments")).get("poll_ids")
        poll_id = poll_ids[0] if type(poll_ids) is list and poll_ids else None
        self.poll = inc.polls.get(poll_id) or _NONE if type(poll_id) is str else _NONE
        place_id = obj(t.get("geo")).get("place_id")
        self.place = inc.places.get(place_id) or _NONE if type(place_id) is str else _NONE


_NONE: dict[str, Any] = {}


def _prepare_py(item: Item) -> _Prepared:
    item.scratch = prepared = _Prepared(item)
    return prepared


def _p(item: Item) -> _Prepared:
    prepared: _Prepared = item.scratch
    return prepared


# twarc-csv's _process_entities: #tag, $cash, @user, expanded (or, for media, display) urls.
_ENTITY_TEXT = {
    "hashtags": lambda es: ["#" + e.get("tag", "") for e in es],
    "cashtags": lambda es: ["$" + e.get("tag", "") for e in es],
    "mentions": lambda es: ["@" + e.get("username", "") for e in es],
    "urls": lambda es: [e.get("display_url") if "media_key" in e else e.get("expanded_url") for e in es],
}


def _entity_columns(ents: Any) -> dict[str, str | None]:
    """Each kind of entities present as its column's JSON (other kinds, e.g. annotations, as they are)."""
    if type(ents) is not dict or not ents:
        return _NONE
    if _entity_texts is not None:
        texts = _entity_texts(ents)  # the four kinds above in C; None: a shape it leaves to the code below
        if texts is not None:
            if len(texts) < len(ents):
                for kind, values in ents.items():
                    if kind not in texts:
                        texts[kind] = _json_text(values)
            return texts
    columns = {}
    for kind, values in ents.items():
        text = _ENTITY_TEXT.get(kind)
        columns[kind] = _json_text(text(objs(values)) if text is not None and values is not None else values)
    return columns


# The table's prepare: _jsontext.c's for the common shapes (the others go to the Python code: its reference).
_prepare: Callable[[Item], Any] = _prepare_py
if _entity_texts is not None:
    _jsontext_extension.set_fallbacks(json_list, _entity_columns, _Prepared, Includes)
    _prepare = _jsontext_extension.prepare


def _media(item: Item) -> str | None:
    keys = obj(_p(item).merged.get("attachments")).get("media_keys")
    if not keys or type(keys) is not list:
        return None
    media = _p(item).inc.media
    return _json_text([media.get(k, {"media_key": k}) if type(k) is str else {"media_key": k} for k in keys])


def _matching_rules(item: Item) -> Any:
    rules = item.item.get("matching_rules") or _p(item).inc.matching_rules
    return _json_text(rules) if rules else None


@functools.lru_cache(maxsize=256)
def _iso(date: Any) -> str:
    text: str = date.isoformat()  # one harvest date per response, shared by its tweets
    return text


TABLE = Table(
    name="twitter_v2",
    prepare=_prepare,
    columns=(
        Col("id", "id"),
        Col("conversation_id", "conversation_id"),
        Col("referenced_tweets.replied_to.id", "$refs.replied_to"),
        Col("referenced_tweets.retweeted.id", "$refs.retweeted"),
        Col("referenced_tweets.quoted.id", "$refs.quoted"),
        Col("author_id", "author_id"),
        Col("in_reply_to_user_id", "in_reply_to_user_id"),
        Col("in_reply_to_username", "$ref_username.replied_to"),
        Col("retweeted_user_id", "$ref_author.retweeted"),
        Col("retweeted_username", "$ref_username.retweeted"),
        Col("quoted_user_id", "$ref_author.quoted"),
        Col("quoted_username", "$ref_username.quoted"),
        Col("created_at", "created_at"),
        Col("text", "$merged.text", no_newlines),
        Col("lang", "lang"),
        Col("source", "source", no_newlines),
        Col("public_metrics.impression_count", "$merged.public_metrics.impression_count"),
        Col("public_metrics.reply_count", "$merged.public_metrics.reply_count"),
        Col("public_metrics.retweet_count", "$merged.public_metrics.retweet_count"),
        Col("public_metrics.quote_count", "$merged.public_metrics.quote_count"),
        Col("public_metrics.like_count", "$merged.public_metrics.like_count"),
        Col("reply_settings", "reply_settings"),
        Col("edit_history_tweet_ids", "edit_history_tweet_ids", json_list),
        Col("edit_controls.edits_remaining", "edit_controls.edits_remaining"),
        Col("edit_controls.editable_until", "edit_controls.editable_until"),
        Col("edit_controls.is_edit_eligible", "edit_controls.is_edit_eligible"),
        Col("possibly_sensitive", "possibly_sensitive"),
        Col("withheld.scope", "withheld.scope"),
        Col("withheld.copyright", "withheld.copyright"),
        Col("withheld.country_codes", "withheld.country_codes", json_list),
        Col("entities.annotations", "$ents.annotations"),
        Col("entities.cashtags", "$ents.cashtags"),
        Col("entities.hashtags", "$ents.hashtags"),
        Col("entities.mentions", "$ents.mentions"),
        Col("entities.urls", "$ents.urls"),
        Col("context_annotations", "$merged.context_annotations", json_list),
        Col("attachments.media", _media),
        Col("attachments.media_keys", "$merged.attachments.media_keys", json_list),
        Col("attachments.poll.duration_minutes", "$poll.duration_minutes"),
        Col("attachments.poll.end_datetime", "$poll.end_datetime"),
        Col("attachments.poll.id", "$poll.id"),
        Col("attachments.poll.options", "$poll.options", json_list),
        Col("attachments.poll.voting_status", "$poll.voting_status"),
        Col("attachments.poll_ids", "attachments.poll_ids", json_list),
        Col("author.id", "$author.id"),
        Col("author.created_at", "$author.created_at"),
        Col("author.username", "$author.username"),
        Col("author.name", "$author.name", no_newlines),
        Col("author.description", "$author.description", no_newlines),
        Col("author.entities.description.cashtags", "$author_ents.cashtags"),
        Col("author.entities.description.hashtags", "$author_ents.hashtags"),
        Col("author.entities.description.mentions", "$author_ents.mentions"),
        Col("author.entities.description.urls", "$author_ents.urls"),
        Col("author.entities.url.urls", "$author_urls"),
        Col("author.url", "$author_url"),
        Col("author.location", "$author.location", no_newlines),
        Col("author.pinned_tweet_id", "$author.pinned_tweet_id"),
        Col("author.profile_image_url", "$author.profile_image_url"),
        Col("author.protected", "$author.protected"),
        Col("author.public_metrics.followers_count", "$author.public_metrics.followers_count"),
        Col("author.public_metrics.following_count", "$author.public_metrics.following_count"),
        Col("author.public_metrics.listed_count", "$author.public_metrics.listed_count"),
        Col("author.public_metrics.tweet_count", "$author.public_metrics.tweet_count"),
        Col("author.verified", "$author.verified"),
        Col("author.verified_type", "$author.verified_type"),
        Col("author.withheld.scope", "$author.withheld.scope"),
        Col("author.withheld.copyright", "$author.withheld.copyright"),
        Col("author.withheld.country_codes", "$author.withheld.country_codes", json_list),
        Col("geo.coordinates.coordinates", "geo.coordinates.coordinates", json_list),
        Col("geo.coordinates.type", "geo.coordinates.type"),
        Col("geo.country", "$place.country", no_newlines),
        Col("geo.country_code", "$place.country_code"),
        Col("geo.full_name", "$place.full_name", no_newlines),
        Col("geo.geo.bbox", "$place.geo.bbox", json_list),
        Col("geo.geo.type", "$place.geo.type"),
        Col("geo.id", "$place.id"),
        Col("geo.name", "$place.name", no_newlines),
        Col("geo.place_id", "geo.place_id"),
        Col("geo.place_type", "$place.place_type"),
        Col("matching_rules", _matching_rules),
        Col("__twarc.retrieved_at", "@harvest_date", _iso),
        Col("__twarc.url", "@url"),
        Col("__twarc.version", constant(VERSION)),
        # after SFM's columns: what twarc-csv added since 0.7.1
        Col("public_metrics.bookmark_count", "$merged.public_metrics.bookmark_count"),
    ),
)


def _tweet_id(value: Any) -> str | None:
    """The id of a tweet; None for anything else."""
    return item_id(value.get("id")) if type(value) is dict and "text" in value else None


class TwitterV2(Source):
    table = TABLE
    url_markers = (
        # by path: SWATH_TWITTER_API_URL may move the host
        "/2/tweets/search/",  # recent, all, stream
        "/2/tweets/sample",
        "/2/users/",  # users/:id/tweets, /mentions (only responses with tweets yield items)
    )

    def accepts(self, url: str) -> bool:
        if not super().accepts(url):
            return False
        return "/2/users/" not in url or "/tweets" in url or "/mentions" in url

    def flat_raws(self, doc: Doc, resp: Response) -> list[bytes | None]:
        """json_full: the doc's tweets flattened as twarc does (flat.py), in `data` order."""
        if orjson.dumps(doc.value) != doc.body and scan_spans(doc.body, ()).duplicate_keys:
            self.duplicate_keys += 1  # written as parsed: each key once, its last value
        meta = twarc_meta(url=resp.url, retrieved=resp.date, version=VERSION)
        return [orjson.dumps(t) for t in flattened(doc.body, meta=meta)]

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        if not isinstance(value, dict):
            return
        data = value.get("data")
        context = Includes(value.get("includes"), value.get("matching_rules"))
        if isinstance(data, list):
            tweets = data
        elif _tweet_id(data) is not None:  # a stream line
            tweets = [data]
        else:
            return
        raws = self.flat_raws(doc, resp) if want_raw else [None] * len(tweets)
        for tweet, raw in zip(tweets, raws):
            tweet_id = _tweet_id(tweet)
            if tweet_id is None:
                continue
            yield Item(
                type="twitter_v2", id=tweet_id, url=resp.url, item=tweet, harvest_date=resp.date,
                uid=tweet.get("author_id"), date_text=tweet.get("created_at"), parse_date=iso_date,
                raw=raw, context=context,
            )
