"""Tumblr (v2 /blog/<blog>/posts responses): posts table. A seed's uid is the blog name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from swath.exporters.dates import unix_date
from swath.exporters.items import Doc, Item, Source, item_id, obj
from swath.exporters.jsonspan import ANY
from swath.exporters.table import Col, Table, json_list, no_newlines
from swath.exporters.warc_reader import Response


def _text(item: Item) -> Any:
    post = item.item
    # The text a reader sees depends on the post type (text body, photo caption, quote, link...).
    for key in ("body", "caption", "text", "description", "question"):
        if post.get(key):
            return post[key]
    return None


TABLE = Table(
    name="tumblr_post",
    columns=(
        Col("created_at", "timestamp", lambda v: unix_date(v).isoformat() if v else None),
        Col("tumblr_id", "id_string", None),
        Col("blog_name", "blog_name"),
        Col("post_type", "type"),
        Col("post_slug", "slug"),
        Col("post_summary", "summary", no_newlines),
        Col("post_text", _text, no_newlines),
        Col("tags", "tags", json_list),
        Col("note_count", "note_count"),
        Col("tumblr_url", "post_url"),
        Col("tumblr_short_url", "short_url"),
    ),
)


def _id(post: dict[str, Any]) -> str | None:
    return item_id(post.get("id_string")) or item_id(post.get("id"))


class Tumblr(Source):
    table = TABLE
    url_markers = ("/v2/blog/",)  # by path: SWATH_TUMBLR_API_URL may move the host

    def accepts(self, url: str) -> bool:
        return super().accepts(url) and "/posts" in url

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        posts = obj(obj(value).get("response")).get("posts")
        if not isinstance(posts, list):
            return
        raws = self.raws(doc, ("response", "posts", ANY), posts, want_raw)
        for post, raw in zip(posts, raws):
            post_id = _id(post) if isinstance(post, dict) else None
            if post_id is None:
                continue
            post.setdefault("id_string", post_id)
            yield Item(
                type="tumblr_post", id=post_id, url=resp.url, item=post, harvest_date=resp.date,
                uid=post.get("blog_name"), date_text=post.get("timestamp"), parse_date=unix_date, raw=raw,
            )
