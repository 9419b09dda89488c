"""Harvest type name -> (platform, "module:Class", may stream?), imported only when looked up.

Platform engineers add one line per harvest type to HARVEST_TYPES. A third-party metadata backend
installed under the `swath.backends` entry point group needs no line: its name is its harvest type
and platform (see harvesters/backends.py). The worker runtime and the CLI use `harvester_types()`
to bind queues and `lookup(type)` to find the class.
"""

from __future__ import annotations

import functools
import importlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swath.messages import codes

if TYPE_CHECKING:
    from swath.harvesters.base import Harvester

log = logging.getLogger(__name__)

# type name: (platform for routing keys, "module:Class", may be a stream: the worker runs such types
# concurrently; each message's Harvester.is_stream(start) decides)
HARVEST_TYPES: dict[str, tuple[str, str, bool]] = {
    "generic_pages": ("generic", "swath.harvesters.generic:GenericHarvester", False),
    "generic_stream": ("generic", "swath.harvesters.generic:GenericHarvester", True),
    "twitter_search_2": ("twitter", "swath.harvesters.twitter:TwitterHarvester", False),
    "twitter_search": ("twitter", "swath.harvesters.twitter:TwitterHarvester", False),
    "twitter_academic_search": ("twitter", "swath.harvesters.twitter:TwitterHarvester", False),
    "twitter_user_timeline_2": ("twitter", "swath.harvesters.twitter:TwitterHarvester", False),
    "twitter_filter_stream": ("twitter", "swath.harvesters.twitter:TwitterHarvester", True),
    "twitter_sample": ("twitter", "swath.harvesters.twitter:TwitterHarvester", True),
    "flickr_user": ("flickr", "swath.harvesters.flickr:FlickrHarvester", False),
    "tumblr_blog_posts": ("tumblr", "swath.harvesters.tumblr:TumblrHarvester", False),
    "metashare_sync": ("metashare", "swath.harvesters.metashare.harvester:MetashareHarvester", False),
    "oai_pmh": ("oai_pmh", "swath.harvesters.oai_pmh:OAIPMHHarvester", False),
    "dcat": ("dcat", "swath.harvesters.dcat:DCATHarvester", False),
    "ckan": ("ckan", "swath.harvesters.ckan:CKANHarvester", False),
    "opendatasoft": ("opendatasoft", "swath.harvesters.opendatasoft:OpenDataSoftHarvester", False),
    "xesam_pmh": ("xesam", "swath.harvesters.xesam.harvester:XesamHarvester", True),
    "kiel_archive": ("kiel", "swath.harvesters.kiel.harvester:KielHarvester", False),
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
    target: str  # "module:Class" (of the Backend, for an entry-point backend)
    stream: bool  # may stream
    backend: bool = False  # a `swath.backends` entry point, run by harvesters.backends.BackendHarvester

    def load(self) -> type[Harvester]:
        """Import the class; checks it really handles this type."""
        if self.backend:
            return _backend_harvester(self.name, self.target)
        module_name, _, class_name = self.target.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        if self.name not in cls.types:
            raise UnknownHarvestType(f"{self.target} does not list harvest type {self.name!r} in its types")
        if (self.name in cls.stream_types) != self.stream:
            raise UnknownHarvestType(f"registry and {self.target} disagree on whether {self.name!r} is a stream")
        return cls


def harvester_types() -> list[HarvesterType]:
    """Every registered harvest type and every entry-point backend that loads, sorted by name."""
    found = [lookup(name) for name in HARVEST_TYPES]
    for name, target in _plugin_backends().items():
        htype = HarvesterType(name, name, target, False, backend=True)
        try:
            htype.load()
        except UnknownHarvestType as exc:  # a broken plugin must not take the installed types down with it
            log.warning("%s", exc.message)
            continue
        found.append(htype)
    return sorted(found, key=lambda t: t.name)


def lookup(type_name: str) -> HarvesterType:
    """The registered type, else an entry-point backend of that name; UnknownHarvestType if neither."""
    if type_name in HARVEST_TYPES:
        platform, target, stream = HARVEST_TYPES[type_name]
        return HarvesterType(type_name, platform, target, stream)
    plugins = _plugin_backends()
    if type_name in plugins:
        return HarvesterType(type_name, type_name, plugins[type_name], False, backend=True)
    known = ", ".join(sorted([*HARVEST_TYPES, *plugins])) or "none"
    raise UnknownHarvestType(f"no harvester for harvest type {type_name!r}; known types: {known}")


def _plugin_backends() -> dict[str, str]:
    """Entry-point backends whose name is not a registered type (the registry wins), name -> target."""
    # imported here: harvesters.backends imports the engine, which imports this module
    from swath.harvesters.backends import installed_backends

    return {name: target for name, target in installed_backends().items() if name not in HARVEST_TYPES}


def _backend_harvester(name: str, target: str) -> type[Harvester]:
    from swath.harvesters.backends import load_backend

    try:
        backend = load_backend(name)
    except Exception as exc:  # ImportError, AttributeError, not a Backend: the plugin's fault, said clearly
        raise UnknownHarvestType(f"backend {name!r} ({target}) cannot be loaded: {type(exc).__name__}: {exc}") from None
    if backend.name != name:
        raise UnknownHarvestType(f"backend {target} is installed as {name!r} but names itself {backend.name!r}")
    return _harvester_class(backend)


@functools.cache
def _harvester_class(backend: type) -> type[Harvester]:
    """One Harvester class per backend class, however often it is looked up."""
    from swath.harvesters.backends import harvester_for

    return harvester_for(backend)
