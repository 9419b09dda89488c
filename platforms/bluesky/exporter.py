"""Bluesky posts: app.bsky.feed.getAuthorFeed / getFeed / searchPosts pages and Jetstream event segments.

Every source yields entries of one shape, `{"post": <app.bsky.feed.defs#postView>, "reason": ...}`, so one
declarative table serves all four export types: a search hit is wrapped as `{"post": hit}`, a Jetstream
commit of an `app.bsky.feed.post` becomes a post view of what the event carries (no author handle, no
counts: the firehose has neither), and a Jetstream delete is a tombstone (dedupe drops the post). A repost
in a feed is a row of its own (its id the repost record's uri), naming who reposted. The id is the post's
at:// uri; `url` its bsky.app link.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

from swath.exporters.dates import iso_date
from swath.exporters.items import Doc, Item, Source, obj, objs
from swath.exporters.jsonspan import ANY
from swath.exporters.table import Col, Table, json_list, no_newlines
from swath.exporters.warc_reader import Response

POST = "app.bsky.feed.post"
_LISTS = {"app.bsky.feed.getAuthorFeed": "feed", "app.bsky.feed.getFeed": "feed", "app.bsky.feed.searchPosts": "posts"}
_FACET = "app.bsky.richtext.facet#"


def _post(item: Item) -> dict[str, Any]:
    return obj(item.item.get("post"))


def _record(item: Item) -> dict[str, Any]:
    return obj(_post(item).get("record"))


def bsky_url(item: Item) -> str | None:
    """https://bsky.app/profile/<handle or did>/post/<rkey> for an at://<did>/app.bsky.feed.post/<rkey> uri."""
    uri = _post(item).get("uri")
    if type(uri) is not str or not uri.startswith("at://"):
        return None
    did, _, rest = uri[5:].partition("/")
    collection, _, rkey = rest.partition("/")
    if collection != POST or not rkey:
        return None
    handle = obj(_post(item).get("author")).get("handle")
    who = handle if type(handle) is str and handle and handle != "handle.invalid" else did
    return f"https://bsky.app/profile/{who}/post/{rkey}"


def _features(item: Item, kind: str, key: str) -> list[object]:
    return [f.get(key) for facet in objs(_record(item).get("facets")) for f in objs(obj(facet).get("features"))
            if f.get("$type") == _FACET + kind]


def hashtags(item: Item) -> str | None:
    tags = _features(item, "tag", "tag") + [t for t in _record(item).get("tags") or () if type(t) is str]
    return json_list(tags) if tags else None


def mentions(item: Item) -> str | None:
    dids = _features(item, "mention", "did")
    return json_list(dids) if dids else None


def links(item: Item) -> str | None:
    uris = _features(item, "link", "uri")
    external = obj(obj(_record(item).get("embed")).get("external")).get("uri")
    if type(external) is str and external not in uris:
        uris.append(external)
    return json_list(uris) if uris else None


def _embeds(embed: Any) -> Iterator[dict[str, Any]]:
    """An embed view and the media part of a record-with-media view."""
    embed = obj(embed)
    if embed:
        yield embed
        yield from _embeds(embed.get("media"))


def media_urls(item: Item) -> str | None:
    urls: list[object] = []
    for embed in _embeds(_post(item).get("embed")):
        urls += [image.get("fullsize") for image in objs(embed.get("images"))]
        if type(embed.get("playlist")) is str:  # a video view's HLS playlist
            urls.append(embed["playlist"])
    return json_list(urls) if urls else None


def quote_of(item: Item) -> object:
    embed = obj(_record(item).get("embed"))
    quoted = obj(embed.get("record"))
    return obj(quoted.get("record")).get("uri") or quoted.get("uri")  # record-with-media nests one deeper


def labels(item: Item) -> str | None:
    values = [label.get("val") for label in objs(_post(item).get("labels"))]
    return json_list(values) if values else None


def langs(value: object) -> str | None:
    return ",".join(v for v in value if type(v) is str) if type(value) is list and value else None


def repost_by(item: Item) -> object:
    reason = obj(item.item.get("reason"))
    return obj(reason.get("by")).get("handle") if "Repost" in str(reason.get("$type", "")) else None


TABLE = Table(
    name="bluesky_post",
    columns=(
        Col("id", "@id"),
        Col("uri", "post.uri"),
        Col("cid", "post.cid"),
        Col("url", bsky_url),
        Col("created_at", "post.record.createdAt"),
        Col("indexed_at", "post.indexedAt"),
        Col("author_did", "post.author.did"),
        Col("author_handle", "post.author.handle"),
        Col("author_display_name", "post.author.displayName", no_newlines),
        Col("text", "post.record.text", no_newlines),
        Col("lang", "post.record.langs", langs),
        Col("in_reply_to", "post.record.reply.parent.uri"),
        Col("reply_root", "post.record.reply.root.uri"),
        Col("quote_of", quote_of),
        Col("reposted_by", repost_by),
        Col("reposted_at", "reason.indexedAt"),
        Col("reply_count", "post.replyCount"),
        Col("repost_count", "post.repostCount"),
        Col("like_count", "post.likeCount"),
        Col("quote_count", "post.quoteCount"),
        Col("media_urls", media_urls),
        Col("hashtags", hashtags),
        Col("mentions", mentions),
        Col("links", links),
        Col("labels", labels),
    ),
)


class BlueskyPosts(Source):
    table = TABLE
    url_markers = (*_LISTS, "/subscribe")  # by path: SWATH_BLUESKY_API_URL and jetstream_url move hosts

    def reads(self, resp: Response) -> bool:
        # a Jetstream connection's events are its resource records; its 101 handshake holds none
        return self.accepts(resp.url) and ("/subscribe" not in resp.url or resp.status is None)

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        if "/subscribe" in resp.url:
            yield from self._event(doc, resp, want_raw)
            return
        field = next((f for nsid, f in _LISTS.items() if nsid in resp.url), "feed")
        entries = obj(doc.value).get(field)
        if type(entries) is not list:
            return
        raws = self.raws(doc, (field, ANY), entries, want_raw)
        for entry, raw in zip(entries, raws):
            if type(entry) is not dict:
                continue
            wrapped = entry if field == "feed" else {"post": entry}
            item = self._item(wrapped, resp, raw)
            if item is not None:
                yield item

    def _item(self, entry: dict[str, Any], resp: Response, raw: bytes | None, *,
              deleted: bool = False) -> Item | None:
        post, reason = obj(entry.get("post")), obj(entry.get("reason"))
        uri = post.get("uri")
        if type(uri) is not str or not uri:
            return None
        item_id: str = uri
        uid = obj(post.get("author")).get("did")
        if "Repost" in str(reason.get("$type", "")):  # the repost is an item of its own
            by = obj(reason.get("by")).get("did")
            repost = reason.get("uri")
            item_id = repost if type(repost) is str and repost else f"{uri}#repost:{by}"
            uid = by
        return Item(type=TABLE.name, id=item_id, url=resp.url, item=entry, harvest_date=resp.date,
                    uid=uid if type(uid) is str else None, date_text=obj(post.get("record")).get("createdAt"),
                    parse_date=iso_date, raw=raw, deleted=deleted)

    def _event(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        event = obj(doc.value)
        commit, did = obj(event.get("commit")), event.get("did")
        if event.get("kind") != "commit" or commit.get("collection") != POST or type(did) is not str:
            return
        rkey, time_us = commit.get("rkey"), event.get("time_us")
        if type(rkey) is not str or not rkey:
            return
        post = {"uri": f"at://{did}/{POST}/{rkey}", "cid": commit.get("cid"), "author": {"did": did},
                "record": obj(commit.get("record"))}
        if type(time_us) is int and 0 < time_us < 253402300800 * 10**6:
            post["indexedAt"] = dt.datetime.fromtimestamp(time_us / 1e6, dt.UTC).isoformat()
        deleted = commit.get("operation") == "delete"
        item = self._item({"post": post}, resp, self.whole_raw(doc, want_raw), deleted=deleted)
        if item is not None:
            yield item
