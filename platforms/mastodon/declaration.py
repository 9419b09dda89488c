"""Mastodon's declaration: data only, importing only swath.core (its harvester is harvester.py beside it, with
client.py and stream.py; its table exporter.py)."""

from __future__ import annotations

from swath.core.platforms import CONTINUE_CURSOR_OPTION, ExportKind, HarvestKind, Platform, Seeds, options

_STATUSES = "swath.platforms.mastodon.exporter:Mastodon"
_READS = "`api/v1/timelines/…`, `api/v1/accounts/:id/statuses`, `api/v2/search`, `api/v1/streaming/…` events"
_NOTE = "see [Mastodon](#mastodon-statuses)"
TYPES = ("mastodon_hashtag", "mastodon_account", "mastodon_public", "mastodon_search", "mastodon_stream")
PLATFORM = Platform(
    name="mastodon",
    title="Mastodon",
    harvester="swath.platforms.mastodon.harvester:MastodonHarvester",
    harvest_types=(
        HarvestKind(name="mastodon_hashtag", method="hashtag",
                    seeds=Seeds(example=({"id": "libraries", "token": "libraries"},))),
        HarvestKind(name="mastodon_account", method="account",
                    seeds=Seeds(example=({"id": "gargron", "token": "@Gargron"},))),
        HarvestKind(name="mastodon_public", method="public",
                    seeds=Seeds(required=False)),  # no seed: the API root's instance
        HarvestKind(name="mastodon_search", method="search",
                    seeds=Seeds(example=({"id": "webarchiving", "token": "web archiving"},))),
        HarvestKind(name="mastodon_stream", method="stream", stream=True,
                    seeds=Seeds(example=({"id": "libraries", "token": "#libraries"},))),
    ),
    export_types=tuple(ExportKind(name=name, sources=(_STATUSES,), reads=_READS, table_note=_NOTE) for name in TYPES),
    api_url="https://mastodon.social",
    api_about="the Mastodon instance a seed reads when it names none; seeds may name any other instance themselves",
    options=options(
        incremental={"type": "boolean", "description": "fetch only posts newer than the newest of the last run"},
        local={"type": "boolean", "description": "only the instance's own posts (hashtag and public timelines, "
                                                 "streams)"},
        only_media={"type": "boolean", "description": "only posts with media attachments"},
        limit={"type": "integer", "minimum": 1, "description": "at most this many posts per seed (not streams)"},
        continue_cursor=CONTINUE_CURSOR_OPTION,
    ),
    clients=("mastodon",),
    codes={
        "account_moved": "the account says it moved; its new address is the seed's token update",
        "account_gone": "the instance answered 410 Gone for the account (suspended or deleted)",
        "instance_unreachable": "an instance failed (connection errors, 5xx, deadline) after retries",
        "search_unavailable": "a post search without an access token: most instances then find nothing",
        "credential_unused": "an instance's access token was not sent: the seed does not name it as a URL",
    },
)
