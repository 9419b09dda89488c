"""Bluesky's declaration (data only; its harvester is harvester.py beside it, with xrpc.py and jetstream*.py; its
table exporter.py)."""

from __future__ import annotations

from swath.core.platforms import CONTINUE_CURSOR_OPTION, ExportKind, HarvestKind, OptionSchema, Platform, Seeds, options

_BSKY_DID = "did:plc:z72i7hdynmk6r22z27h6tvur"  # the bsky.app account
_READS = ("XRPC `getAuthorFeed`, `searchPosts`, `getFeed` pages and Jetstream event segments (any of them, whatever "
          "the type)")
_POSTS = ("swath.platforms.bluesky.exporter:BlueskyPosts",)
_ISO: OptionSchema = {"type": "string", "format": "date-time"}
PLATFORM = Platform(
    name="bluesky",
    title="Bluesky",
    harvester="swath.platforms.bluesky.harvester:BlueskyHarvester",
    harvest_types=(
        HarvestKind(name="bluesky_author_feed", method="author_feed",
                    seeds=Seeds(example=({"id": "bsky", "token": "bsky.app"},))),
        HarvestKind(name="bluesky_search", method="search",
                    seeds=Seeds(example=({"id": "libraries", "token": {"query": "libraries",
                                                                       "since": "2026-01-01T00:00:00Z"}},))),
        HarvestKind(name="bluesky_feed", method="feed", seeds=Seeds(example=(
            {"id": "whats-hot", "token": f"at://{_BSKY_DID}/app.bsky.feed.generator/whats-hot"},))),
        HarvestKind(name="bluesky_jetstream", method="jetstream", stream=True,
                    seeds=Seeds(required=False, example=({"id": "bsky", "token": _BSKY_DID},))),
    ),
    export_types=tuple(ExportKind(name=name, sources=_POSTS, reads=_READS, table_note="see [Bluesky](#bluesky)")
                       for name in ("bluesky_author_feed", "bluesky_search", "bluesky_feed", "bluesky_jetstream")),
    api_url="https://bsky.social",
    clients=("atproto",),
    api_about=("the XRPC root the atproto SDK talks to (`/xrpc/...`; login, feeds, search); "
               "Jetstream's URL is the `jetstream_url` option"),
    login_names=("identifier",),  # the handle or e-mail: public; `app_password` and the session JWTs are secrets
    options=options(
        incremental={"type": "boolean", "description": "continue after the newest post of the last run"},
        since={**_ISO, "description": "bluesky_search: posts from this time (a seed's own `since` wins)"},
        until={**_ISO, "description": "bluesky_search: posts before this time (a seed's own `until` wins)"},
        collections={"type": "array", "items": {"type": "string", "pattern": r"^[a-zA-Z][\w.-]*(\.\*)?$"},
                     "maxItems": 100, "description": "bluesky_jetstream: the record collections (NSIDs) wanted; "
                                                     "default app.bsky.feed.post"},
        jetstream_url={"type": "string", "pattern": r"^wss?://[^/?#@\s]+(/[^?#\s]*)?$",  # no user:password@
                       "description": "bluesky_jetstream: the Jetstream instance (default "
                                      "wss://jetstream2.us-east.bsky.network)"},
        continue_cursor=CONTINUE_CURSOR_OPTION,
    ),
    codes={
        "jetstream_reconnected": "a Jetstream connection ended; reconnected at the last event's cursor",
        "events_dropped": "stream events sent again at or before the cursor (replays): not recorded, counted",
        "event_future_dated": "a stream event dated past this machine's clock: recorded, not the cursor",
    },
)
