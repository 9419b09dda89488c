"""Mastodon statuses (timeline pages, account statuses, search results and streaming events): the
mastodon_status table. A seed's uid is the account id. Stream records hold server-sent events: `update` and
`status.update` are statuses (an edit is the same id again, so a deduped export keeps the latest copy),
`delete` is a tombstone (a deduped export leaves the status out). A record may begin with the `data:` line of
an event whose `event:` line ended the record before: a status is an update, a bare id a delete."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlsplit

import orjson

from swath.exporters.dates import iso_date
from swath.exporters.items import Doc, Item, Source, docs, item_id, obj, objs
from swath.exporters.jsonspan import ANY
from swath.exporters.table import Col, Table, json_list, no_newlines
from swath.exporters.warc_reader import Response

_BREAKS = {"br": "\n", "p": "\n\n"}  # where HTML's layout puts a line break into the text a reader sees
_STATUS_ID = re.compile(rb"[0-9A-Za-z]{1,64}")  # Mastodon's numeric ids, Pleroma's flake ids


class _Html(HTMLParser):
    """A status's `content` as plain text, and the links in it that are neither mentions nor hashtags."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "br":
            self.parts.append("\n")
        if tag == "a":
            values = dict(attrs)
            classes = (values.get("class") or "").split()
            href = values.get("href")
            if href and "mention" not in classes and "hashtag" not in classes:
                self.links.append(href)

    def handle_endtag(self, tag: str) -> None:
        if tag == "p":
            self.parts.append(_BREAKS["p"])

    def handle_data(self, data: str) -> None:
        self.parts.append(data)


@dataclass(slots=True)
class _Prepared:
    text: str | None = None
    links: list[str] = field(default_factory=list)
    handle: str | None = None


def _prepare(item: Item) -> _Prepared:
    status = obj(item.item)
    content = status.get("content")
    prepared = _Prepared(handle=_handle(obj(status.get("account"))))
    if isinstance(content, str):
        parser = _Html()
        parser.feed(content)
        parser.close()
        prepared.text = "".join(parser.parts).strip()
        prepared.links = parser.links
    card = obj(status.get("card")).get("url")
    if isinstance(card, str) and card not in prepared.links:
        prepared.links.append(card)
    return prepared


def _handle(account: dict[str, Any]) -> str | None:
    """`@user@instance` for every author (a local account's `acct` has no instance: it is the URL's host)."""
    acct = account.get("acct")
    if not isinstance(acct, str) or not acct:
        return None
    if "@" in acct:
        return f"@{acct}"
    url = account.get("url")
    host = urlsplit(url).hostname if isinstance(url, str) else None
    return f"@{acct}@{host}" if host else f"@{acct}"


def _values(key: str, name: str) -> Callable[[Any], list[Any]]:
    """The `name` of each object in the status's `key` list (media URLs, hashtags, mentions)."""
    return lambda item: [o.get(name) for o in objs(obj(item.item).get(key)) if o.get(name) is not None]


def _joined(values: Any) -> str | None:
    return " ".join(str(v) for v in values) if values else None


def _quoted(item: Item) -> Any:
    quote = obj(obj(item.item).get("quote"))
    return obj(quote.get("quoted_status")).get("id") or quote.get("quoted_status_id")


TABLE = Table(
    name="mastodon_status",
    columns=(
        Col("id", "id"),
        Col("url", "url"),
        Col("uri", "uri"),
        Col("created_at", "created_at"),
        Col("edited_at", "edited_at"),
        Col("account_id", "account.id"),
        Col("account_handle", "$handle"),
        Col("account_display_name", "account.display_name", no_newlines),
        Col("account_url", "account.url"),
        Col("text", "$text", no_newlines),
        Col("content_warning", "spoiler_text", no_newlines),
        Col("sensitive", "sensitive"),
        Col("language", "language"),
        Col("visibility", "visibility"),
        Col("in_reply_to_id", "in_reply_to_id"),
        Col("in_reply_to_account_id", "in_reply_to_account_id"),
        Col("reblog_of_id", "reblog.id"),
        Col("reblog_of_handle", lambda item: _handle(obj(obj(item.item.get("reblog")).get("account")))),
        Col("quote_of_id", _quoted),
        Col("replies_count", "replies_count"),
        Col("reblogs_count", "reblogs_count"),
        Col("favourites_count", "favourites_count"),
        Col("media_urls", _values("media_attachments", "url"), _joined),
        Col("media_types", _values("media_attachments", "type"), _joined),
        Col("hashtags", _values("tags", "name"), _joined),
        Col("mentions", _values("mentions", "acct"), _joined),
        Col("links", "$links", _joined),
        Col("poll_options", lambda item: [o.get("title") for o in objs(obj(item.item.get("poll")).get("options"))]
            or None, json_list),
        Col("harvested_from", "@url"),
    ),
    prepare=_prepare,
)


class Mastodon(Source):
    table = TABLE
    # by path: a collection may hold many instances
    url_markers = ("/api/v1/timelines/", "/api/v1/accounts/", "/api/v2/search", "/api/v1/streaming/")

    def accepts(self, url: str) -> bool:
        return super().accepts(url) and ("/api/v1/accounts/" not in url or "/statuses" in url)

    def items(self, resp: Response, *, want_raw: bool, on_bad: Callable[[int], None]) -> Iterator[Item]:
        if "/api/v1/streaming/" in resp.url:
            yield from self._events(resp, want_raw, on_bad)
            return
        for doc in docs(resp.body, on_bad):
            yield from self.doc_items(doc, resp, want_raw)

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        path: tuple[Any, ...] = (ANY,)
        if isinstance(value, dict):  # a search result
            value, path = value.get("statuses"), ("statuses", ANY)
        if not isinstance(value, list):
            return
        for status, raw in zip(value, self.raws(doc, path, value, want_raw)):
            item = _item(status, resp, raw)
            if item is not None:
                yield item

    def _events(self, resp: Response, want_raw: bool, on_bad: Callable[[int], None]) -> Iterator[Item]:
        bad = 0
        for first, (name, data) in enumerate(sse_events(resp.body), start=1):
            if not name and first == 1:  # its `event:` line ended the record before: a segment ends at any line
                name = _continued(data)
                bad += name == "unreadable"
            if name == "delete":
                sid = data.decode("utf-8", "replace").strip()
                if sid:
                    yield Item(type="mastodon_status", id=sid, url=resp.url, item={}, harvest_date=resp.date,
                               uid=None, date_text=None, parse_date=iso_date, deleted=True)
                continue
            if name not in ("update", "status.update"):
                continue
            try:
                status = orjson.loads(data)
            except orjson.JSONDecodeError:
                bad += 1  # an event cut by a stop or a rotation
                continue
            item = _item(status, resp, data if want_raw else None)
            if item is not None:
                yield item
        if bad:
            on_bad(bad)


def _continued(data: bytes) -> str:
    """The event a record's first, nameless data belongs to: the streams harvested (hashtag, public, local)
    send only `update` and `status.update` (a status: JSON; an edit read as an update keeps the same id) and
    `delete` (a status id)."""
    if data.startswith(b"{"):
        return "update"
    return "delete" if _STATUS_ID.fullmatch(data) else "unreadable"


def _item(status: Any, resp: Response, raw: bytes | None) -> Item | None:
    sid = item_id(status.get("id")) if isinstance(status, dict) else None
    if sid is None:
        return None
    return Item(type="mastodon_status", id=sid, url=resp.url, item=status, harvest_date=resp.date,
                uid=item_id(obj(status.get("account")).get("id")), date_text=status.get("created_at"),
                parse_date=iso_date, raw=raw)


def sse_events(body: bytes) -> Iterator[tuple[str, bytes]]:
    """(event name or "", data) of each server-sent event of a body; comments (heartbeats) and fields other than
    `event` and `data` are skipped, several `data` lines are joined with newlines (the SSE rules)."""
    name, data = "", list[bytes]()
    for line in body.splitlines():
        if not line:
            if data:
                yield name, b"\n".join(data)
            name, data = "", list[bytes]()
        elif line.startswith(b":"):
            continue
        else:
            key, _, value = line.partition(b":")
            value = value[1:] if value.startswith(b" ") else value
            if key == b"event":
                name = value.decode("utf-8", "replace")
            elif key == b"data":
                data.append(value)
    if data:  # the last event, when the record ended without its blank line
        yield name, b"\n".join(data)
