"""Tumblr's declaration: data only, importing only swath.core (its harvester is harvester.py beside it, its table
exporter.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, Platform, Seeds, options, with_sfm_ui_keys

PLATFORM = Platform(
    name="tumblr",
    title="Tumblr",
    harvester="swath.platforms.tumblr.harvester:TumblrHarvester",
    harvest_types=(HarvestKind(name="tumblr_blog_posts", method="blog_posts",
                               seeds=Seeds(example=({"id": "gwu-libraries", "uid": "gwulibraries"},))),),
    export_types=(ExportKind(name="tumblr_blog_posts", sources=("swath.platforms.tumblr.exporter:Tumblr",),
                             reads="v2 `blog/<blog>/posts`"),),
    api_url="https://api.tumblr.com",
    api_about="the Tumblr API v2 root (`/v2/blog/<host>/posts`)",
    options=with_sfm_ui_keys(options(incremental={"type": "boolean",
                                                  "description": "stop at the newest post of the last run"})),
    credentials=(("api_key",),),
)
