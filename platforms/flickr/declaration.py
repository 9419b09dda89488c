"""Flickr's declaration: data only, importing only swath.core (its harvester is harvester.py beside it, its table
exporter.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, Platform, Seeds, options, with_sfm_ui_keys

PLATFORM = Platform(
    name="flickr",
    title="Flickr",
    harvester="swath.platforms.flickr.harvester:FlickrHarvester",
    harvest_types=(HarvestKind(name="flickr_user", method="user",
                               seeds=Seeds(example=({"id": "loc", "token": "library_of_congress"},))),),
    export_types=(ExportKind(name="flickr_user", sources=("swath.platforms.flickr.exporter:Flickr",), reads=(
        "`flickr.photos.getInfo` (by the method in the URL in SFM's WARCs; in swath's, whose calls are POSTs to "
        "`/services/rest/`, by an answer holding a `photo`)")),),
    api_url="https://api.flickr.com",
    clients=("flickrapi",),
    api_about="the Flickr REST root flickrapi talks to (`/services/rest/`)",
    options=with_sfm_ui_keys(options(
        incremental={"type": "boolean", "description": "stop at the newest photo of the last run"},
        sizes={"type": "array", "items": {"type": "string"},
               "description": "image files to fetch as well, by size label "
                              "(Square, Thumbnail, Small, Medium, Large, Original)"},
    )),
    credentials=(("key", "secret"),),
)
