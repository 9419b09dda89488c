"""Weibo (statuses/friends_timeline, search/topics responses in legacy SFM WARCs): posts table."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swath.exporters.dates import twitter_date
from swath.exporters.items import Doc, Item, Source, item_id, obj
from swath.exporters.jsonspan import ANY
from swath.exporters.table import Col, Table, json_list, no_newlines
from swath.exporters.warc_reader import Response


def _id(post: dict[str, Any]) -> str | None:
    return item_id(post.get("idstr")) or item_id(post.get("id"))


def _url(item: Item) -> str | None:
    user = item.item.get("user") or {}
    if not user:
        return None
    return f"https://weibo.com/{user.get('idstr') or user.get('id')}/{item.item.get('mid') or item.id}"


def _retweeted(key: str):
    return lambda item: (item.item.get("retweeted_status") or {}).get(key)


TABLE = Table(
    name="weibo_post",
    columns=(
        Col("created_at", "created_at"),
        Col("weibo_id", "idstr"),
        Col("screen_name", "user.screen_name"),
        Col("user_id", "user.idstr"),
        Col("followers_count", "user.followers_count"),
        Col("friends_count", "user.friends_count"),
        Col("reposts_count", "reposts_count"),
        Col("comments_count", "comments_count"),
        Col("attitudes_count", "attitudes_count"),
        Col("in_reply_to_screen_name", "in_reply_to_screen_name"),
        Col("weibo_url", _url),
        Col("text", "text", no_newlines),
        Col("pic_urls", lambda item: json_list([p.get("thumbnail_pic") for p in item.item.get("pic_urls") or ()])),
        Col("retweeted_id", _retweeted("idstr")),
        Col("retweeted_text", _retweeted("text"), no_newlines),
    ),
)


class Weibo(Source):
    table = TABLE
    url_markers = ("api.weibo.com/2/statuses/", "api.weibo.com/2/search/")

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        posts = value.get("statuses") if isinstance(value, dict) else None
        if not isinstance(posts, list):
            return
        raws = self.raws(doc, ("statuses", ANY), posts, want_raw)
        for post, raw in zip(posts, raws):
            post_id = _id(post) if isinstance(post, dict) else None
            if post_id is None:
                continue
            post.setdefault("idstr", post_id)
            yield Item(
                type="weibo_post", id=post_id, url=resp.url, item=post, harvest_date=resp.date,
                uid=obj(post.get("user")).get("idstr"), date_text=post.get("created_at"),
                parse_date=twitter_date, raw=raw,
            )
