"""Twitter's declaration (data only; its harvester is harvester.py beside it, its tables exporter_v1.py and
exporter_v2.py)."""

from __future__ import annotations

import dataclasses

from swath.core.platforms import ExportKind, HarvestKind, Platform, RetiredKind, Seeds, options, with_sfm_ui_keys

_V1 = ("swath.platforms.twitter.exporter_v1:TwitterV1", "swath.platforms.twitter.exporter_v2:TwitterV2")
_V1_READS = "v1.1 `search/tweets`, `statuses/user_timeline`, `statuses/filter`/`sample` streams"
_V1_NOTE = "SFM's (twarc `json2csv`, 37 columns; see [Twitter](#twitter-tables-sfms))"
_V2_READS = "v2 `tweets/search/recent`/`all`, `users/:id/tweets`, `tweets/search/stream`"
_V2_NOTE = "SFM's 83 (twarc-csv 0.7.1), then `public_metrics.bookmark_count`"
_V2 = tuple(reversed(_V1))  # the primary table is the type's own API version; a collection may hold both
_SEARCH = Seeds(example=({"id": "libraries", "token": "#libraries lang:en"},), max_length=512)  # v2 recent search
PLATFORM = Platform(
    name="twitter",
    title="Twitter",
    harvester="swath.platforms.twitter.harvester:TwitterHarvester",
    harvest_types=(
        HarvestKind(name="twitter_search_2", method="search_recent", seeds=_SEARCH, sfm_platform="twitter2",
                    sfm_priority=True),
        HarvestKind(name="twitter_search", method="search_recent", seeds=_SEARCH,  # the SFM v1 name (spec example)
                    sfm_priority=True),
        HarvestKind(name="twitter_academic_search", method="search_all", sfm_platform="twitter2", sfm_priority=True,
                    seeds=dataclasses.replace(_SEARCH, max_length=1024)),  # full-archive search allows longer
        HarvestKind(name="twitter_user_timeline_2", method="user_timeline", sfm_platform="twitter2", sfm_priority=True,
                    seeds=Seeds(example=({"id": "gwu", "token": "gwu"},))),
        HarvestKind(name="twitter_filter_stream", method="filter_stream", stream=True, sfm_platform="twitter2",
                    seeds=Seeds(example=({"id": "libraries", "token": {"rule": "#libraries", "tag": "libraries"}},))),
        HarvestKind(name="twitter_sample", method="sample", stream=True, seeds=Seeds(token="none", required=False)),
    ),
    export_types=(
        *(ExportKind(name=name, sources=_V1, reads=_V1_READS, table_note=_V1_NOTE) for name in
          ("twitter_search", "twitter_filter", "twitter_sample", "twitter_user_timeline")),
        *(ExportKind(name=name, sources=_V2, reads=_V2_READS, table_note=_V2_NOTE) for name in
          ("twitter_search_2", "twitter_academic_search", "twitter_user_timeline_2", "twitter_filter_stream")),
    ),
    api_url="https://api.twitter.com",
    clients=("twarc",),
    retired_types=(
        RetiredKind(name="twitter_user_timeline", gone="Twitter API v1.1 user timelines",
                    use="twitter_user_timeline_2", priority=True),
        RetiredKind(name="twitter_filter", gone="Twitter API v1.1 statuses/filter streams",
                    use="twitter_filter_stream"),
    ),
    api_about="the Twitter API v2 root twarc talks to (search, users, timelines, streams, `oauth2/token`)",
    options=with_sfm_ui_keys(options(incremental={"type": "boolean",
                                                  "description": "continue after the newest tweet of the last run"})),
    credentials=(("bearer_token",), ("consumer_key", "consumer_secret")),
)
