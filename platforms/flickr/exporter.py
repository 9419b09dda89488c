"""Flickr (flickr.photos.getInfo responses, as SFM's flickr_user harvests record them): photos table."""

from __future__ import annotations

from collections.abc import Iterator

from swath.exporters.dates import unix_date
from swath.exporters.items import Doc, Item, Source, item_id, obj
from swath.exporters.table import Col, Table, from_timestamp, no_newlines
from swath.exporters.warc_reader import Response


def _photopage(item: Item) -> str | None:
    for url in ((item.item.get("urls") or {}).get("url")) or ():
        if url.get("type") == "photopage":
            return url.get("_content")
    return None


def _tags(item: Item) -> str:
    return " ".join(t.get("raw") or t.get("_content", "") for t in (item.item.get("tags") or {}).get("tag", ()))


TABLE = Table(
    name="flickr_photo",
    columns=(
        Col("photo_id", "id"),
        Col("date_posted", "dates.posted", from_timestamp),
        Col("date_taken", "dates.taken"),
        Col("license", "license"),
        Col("safety_level", "safety_level"),
        Col("original_format", "originalformat"),
        Col("owner_nsid", "owner.nsid"),
        Col("owner_username", "owner.username"),
        Col("title", "title._content", no_newlines),
        Col("description", "description._content", no_newlines),
        Col("tags", _tags),
        Col("media", "media"),
        Col("views", "views"),
        Col("photopage", _photopage),
    ),
)


class Flickr(Source):
    table = TABLE
    # SFM's WARCs name the method in the URL; flickrapi POSTs it in the form body, so swath's own harvests record
    # every call as /services/rest/: doc_items keeps only answers holding a `photo` (photos.getInfo)
    url_markers = ("method=flickr.photos.getInfo", "/services/rest")

    def doc_items(self, doc: Doc, resp: Response, want_raw: bool) -> Iterator[Item]:
        value = doc.value
        photo = value.get("photo") if isinstance(value, dict) else None
        if not isinstance(photo, dict):
            return
        photo_id = item_id(photo.get("id"))
        if photo_id is None:
            return
        raw = self.raws(doc, ("photo",), [photo], want_raw)[0]
        yield Item(
            type="flickr_photo", id=photo_id, url=resp.url, item=photo, harvest_date=resp.date,
            uid=obj(photo.get("owner")).get("nsid"),
            date_text=obj(photo.get("dates")).get("posted") or photo.get("dateuploaded"),
            parse_date=unix_date, raw=raw,
        )
