"""Harvest type name -> (platform, "module:Class", stream?), imported only when looked up.

Platform engineers add one line per harvest type to HARVEST_TYPES. The worker runtime and
the CLI use `harvester_types()` to bind queues and `lookup(type)` to find the class.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

from messages import codes

if TYPE_CHECKING:
    from harvesters.base import Harvester

# type name: (platform for routing keys, "module:Class", is a stream harvest)
HARVEST_TYPES: dict[str, tuple[str, str, bool]] = {
    "generic_pages": ("generic", "harvesters.generic:GenericHarvester", False),
    "generic_stream": ("generic", "harvesters.generic:GenericHarvester", True),
    "twitter_search_2": ("twitter", "harvesters.twitter:TwitterHarvester", False),
    "twitter_search": ("twitter", "harvesters.twitter:TwitterHarvester", False),
    "twitter_academic_search": ("twitter", "harvesters.twitter:TwitterHarvester", False),
    "twitter_user_timeline_2": ("twitter", "harvesters.twitter:TwitterHarvester", False),
    "twitter_filter_stream": ("twitter", "harvesters.twitter:TwitterHarvester", True),
    "twitter_sample": ("twitter", "harvesters.twitter:TwitterHarvester", True),
    "flickr_user": ("flickr", "harvesters.flickr:FlickrHarvester", False),
    "tumblr_blog_posts": ("tumblr", "harvesters.tumblr:TumblrHarvester", False),
    "metashare_sync": ("metashare", "harvesters.metashare.harvester:MetashareHarvester", False),
    "oai_pmh": ("oai_pmh", "harvesters.oai_pmh:OAIPMHHarvester", False),
    "dcat": ("dcat", "harvesters.dcat:DCATHarvester", False),
    "ckan": ("ckan", "harvesters.ckan:CKANHarvester", False),
    "opendatasoft": ("opendatasoft", "harvesters.opendatasoft:OpenDataSoftHarvester", False),
    "xesam_pmh": ("xesam", "harvesters.xesam.harvester:XesamHarvester", True),
    "kiel_archive": ("kiel", "harvesters.kiel.harvester:KielHarvester", False),
}


class UnknownHarvestType(LookupError):
    """No harvester is registered for this type."""

    code = codes.UNKNOWN_TYPE

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class HarvesterType:
    name: str
    platform: str
    target: str  # "module:Class"
    stream: bool

    def load(self) -> "type[Harvester]":
        """Import the class; checks it really handles this type."""
        module_name, _, class_name = self.target.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        if self.name not in cls.types:
            raise UnknownHarvestType(f"{self.target} does not list harvest type {self.name!r} in its types")
        if (self.name in cls.stream_types) != self.stream:
            raise UnknownHarvestType(f"registry and {self.target} disagree on whether {self.name!r} is a stream")
        return cls


def harvester_types() -> list[HarvesterType]:
    """Every registered harvest type, sorted by name."""
    return [lookup(name) for name in sorted(HARVEST_TYPES)]


def lookup(type_name: str) -> HarvesterType:
    try:
        platform, target, stream = HARVEST_TYPES[type_name]
    except KeyError:
        known = ", ".join(sorted(HARVEST_TYPES)) or "none"
        raise UnknownHarvestType(f"no harvester for harvest type {type_name!r}; known types: {known}") from None
    return HarvesterType(type_name, platform, target, stream)
