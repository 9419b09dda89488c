"""Tumblr's declaration (data only; its harvester is harvesters/tumblr.py, its table exporters/tumblr.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, Platform, Seeds, options, with_sfm_ui_keys

PLATFORM = Platform(
    name="tumblr",
    title="Tumblr",
    harvester="swath.harvesters.tumblr:TumblrHarvester",
    harvest_types=(HarvestKind(name="tumblr_blog_posts", method="blog_posts",
                               seeds=Seeds(example=({"id": "gwu-libraries", "uid": "gwulibraries"},))),),
    export_types=(ExportKind(name="tumblr_blog_posts", sources=("swath.exporters.tumblr:Tumblr",)),),
    api_url="https://api.tumblr.com",
    api_about="the Tumblr API v2 root (`/v2/blog/<host>/posts`)",
    options=with_sfm_ui_keys(options(incremental={"type": "boolean",
                                                  "description": "stop at the newest post of the last run"})),
    credentials=(("api_key",),),
)
