"""Harvest type name -> (platform, "module:Class", may stream?), from the platform declarations.

Each platform declares its harvest types once (`PLATFORM` in its data-only declaration module,
swath.core.platforms) and is found through the `swath.platforms` entry points (swath.core.discovery); a
harvester class, and its client library, is imported only by `HarvesterType.load()`, when a harvest runs.
A third-party metadata backend installed under the `swath.backends` entry point group needs no
declaration: its name is its harvest type and platform (see harvesters/backends.py). The worker runtime
and the CLI use `harvester_types()` to bind queues and `lookup(type)` to find the class.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swath.core import discovery
from swath.core.errors import SwathError
from swath.core.platforms import Platform
from swath.messages import codes, retired

if TYPE_CHECKING:
    from swath.harvesters.backends import Backend
    from swath.harvesters.base import Harvester

log = logging.getLogger(__name__)


class UnknownHarvestType(SwathError, LookupError):
    """No harvester is registered for this type."""

    code = codes.UNKNOWN_TYPE


class RetiredHarvestType(UnknownHarvestType):
    """A type whose platform API is gone (messages/retired.py): the message names what to use instead."""

    code = codes.API_RETIRED


@dataclass(frozen=True)
class HarvesterType:
    name: str
    platform: str
    target: str  # "module:Class" (of the Backend, for an entry-point backend)
    stream: bool  # may stream
    backend: bool = False  # a `swath.backends` entry point, run by harvesters.backends.BackendHarvester
    service: str = ""  # the declared service name; empty for an entry-point backend (its class names it)

    def load(self) -> type[Harvester]:
        """Import the class; checks it really handles this type."""
        if self.backend:
            return _backend_harvester(self.name, self.target)
        module_name, _, class_name = self.target.partition(":")
        cls: type[Harvester] = getattr(importlib.import_module(module_name), class_name)
        if self.name not in cls.types:
            raise UnknownHarvestType(f"{self.target} does not list harvest type {self.name!r} in its types")
        if (self.name in cls.stream_types) != self.stream:
            raise UnknownHarvestType(f"the declaration and {self.target} disagree on whether {self.name!r} is a stream")
        return cls


def platform_types(platform: Platform) -> list[HarvesterType]:
    """One platform's harvest types, in the order it declares them."""
    return [HarvesterType(kind.name, platform.name, platform.harvester, kind.stream, service=platform.harvester_service)
            for kind in platform.harvest_types]


def harvester_types() -> list[HarvesterType]:
    """Every declared harvest type and every entry-point backend that loads, sorted by name."""
    found = [htype for platform in discovery.platforms() for htype in platform_types(platform)]
    for name, target in _plugin_backends({t.name for t in found}).items():
        htype = HarvesterType(name, name, target, False, backend=True)
        try:
            htype.load()
        except UnknownHarvestType as exc:  # a broken plugin must not take the installed types down with it
            log.warning("%s", exc.message)
            continue
        found.append(htype)
    return sorted(found, key=lambda t: t.name)


def lookup(type_name: str) -> HarvesterType:
    """The declared type, else an entry-point backend of that name; UnknownHarvestType if neither."""
    platform = discovery.owner(type_name, lambda p: p.harvest_methods)
    if platform is not None:
        return next(t for t in platform_types(platform) if t.name == type_name)
    if why := retired.refusal(type_name):
        raise RetiredHarvestType(why)
    # nothing declares it, so every platform is loaded by now: the plugin check below costs no import
    declared = {kind.name for p in discovery.platforms() for kind in p.harvest_types}
    plugins = _plugin_backends(declared)
    if type_name in plugins:
        return HarvesterType(type_name, type_name, plugins[type_name], False, backend=True)
    known = ", ".join(sorted([*declared, *plugins])) or "none"
    raise UnknownHarvestType(f"no harvester for harvest type {type_name!r}; known types: {known}")


def _plugin_backends(declared: set[str]) -> dict[str, str]:
    """Entry-point backends whose name is not a declared type (the declaration wins), name -> target."""
    # imported here: harvesters.backends imports the engine, which imports this module
    from swath.harvesters.backend_plugins import installed_backends

    return {name: target for name, target in installed_backends().items() if name not in declared}


def _backend_harvester(name: str, target: str) -> type[Harvester]:
    from swath.harvesters.backend_plugins import load_backend

    try:
        backend = load_backend(name)
    except Exception as exc:  # ImportError, AttributeError, not a Backend: the plugin's fault, said clearly
        raise UnknownHarvestType(f"backend {name!r} ({target}) cannot be loaded: {type(exc).__name__}: {exc}") from None
    if backend.name != name:
        raise UnknownHarvestType(f"backend {target} is installed as {name!r} but names itself {backend.name!r}")
    return _harvester_class(backend)


_BACKEND_HARVESTERS: dict[type[Backend], type[Harvester]] = {}


def _harvester_class(backend: type[Backend]) -> type[Harvester]:
    """One Harvester class per backend class, however often it is looked up."""
    from swath.harvesters.backends import harvester_for

    if backend not in _BACKEND_HARVESTERS:
        _BACKEND_HARVESTERS.setdefault(backend, harvester_for(backend))  # a racing lookup keeps the first
    return _BACKEND_HARVESTERS[backend]
