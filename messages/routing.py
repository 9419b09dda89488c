"""Routing keys of the SFM messaging spec, built and parsed in one place."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from swath.core import discovery
from swath.core.errors import SwathError
from swath.messages import codes

WARC_CREATED = "warc_created"

# kind of message -> routing-key verb pair, e.g. ("harvest", "start")
KINDS = {
    "harvest_start": ("harvest", "start"),
    "harvest_stop": ("harvest", "stop"),
    "harvest_status": ("harvest", "status"),
    "export_start": ("export", "start"),
    "export_status": ("export", "status"),
}

_PART = re.compile(r"^[A-Za-z0-9_\-]+$")

# SFM's requester appends this to harvest.start keys of collections scheduled at most hourly (sfm-ui
# sfm/ui/jobs.py); SFM's harvesters answer on the status key with the same suffix (sfmutils/harvester.py).
PRIORITY = "priority"


@dataclass(frozen=True)
class SfmName:
    """How SFM 3.x names one of swath's types in its routing keys."""

    # the platform SFM puts in the key (sfm-ui Collection.HARVEST_TYPES_TO_PLATFORM); empty: the type's own
    # platform (its declaration, swath.core.platforms), which SFM uses for the rest
    platform: str = ""
    priority: bool = False  # SFM may send its harvest.start with the `.priority` suffix (PRIORITY_HARVEST_TYPES)


@functools.cache
def sfm_names() -> dict[str, SfmName]:
    """The types whose SFM 3.x keys are not just swath's `<platform>.*` (e.g. Twitter API v2 work goes out under
    the platform "twitter2", hourly searches and timelines as `.priority`), as their declarations say."""
    return {kind.name: SfmName(kind.sfm_platform, kind.sfm_priority) for platform in discovery.platforms()
            for kind in platform.harvest_types if kind.sfm_platform or kind.sfm_priority}


# SFM sends `.priority` only on harvest.start, and its harvesters echo it on harvest.status
_PRIORITY_PAIRS = frozenset({KINDS["harvest_start"], KINDS["harvest_status"]})


class BadRoutingKey(SwathError, ValueError):
    """The routing key is not one of the spec's forms."""

    code = codes.UNKNOWN_ROUTING_KEY


@dataclass(frozen=True)
class RoutingKey:
    kind: str  # one of KINDS or "warc_created"
    platform: str = ""
    type: str = ""
    priority: bool = False  # SFM's `.priority` suffix (harvest.start and harvest.status only)

    def __str__(self) -> str:
        if self.kind == WARC_CREATED:
            return WARC_CREATED
        noun, verb = KINDS[self.kind]
        suffix = f".{PRIORITY}" if self.priority else ""
        return f"{noun}.{verb}.{self.platform}.{self.type}{suffix}"

    def status_key(self) -> RoutingKey:
        """The key a status about this start/stop is published on: same platform, type and suffix, as
        SFM's requester binds them (harvest.status.*.*[.*], export.status.*.*)."""
        noun, _ = KINDS[self.kind]
        return RoutingKey(f"{noun}_status", self.platform, self.type, self.priority)


def key(kind: str, platform: str, type_: str) -> str:
    for part in (platform, type_):
        if not _PART.match(part):
            raise BadRoutingKey(f"routing key part {part!r} must be letters, digits, '_' or '-'")
    return str(RoutingKey(kind, platform, type_))


def parse(routing_key: str) -> RoutingKey:
    if routing_key == WARC_CREATED:
        return RoutingKey(WARC_CREATED)
    parts = routing_key.split(".")
    priority = len(parts) == 5 and parts[4] == PRIORITY and tuple(parts[:2]) in _PRIORITY_PAIRS
    if len(parts) == 4 or priority:
        for kind, pair in KINDS.items():
            if tuple(parts[:2]) == pair and all(_PART.match(p) for p in parts[2:4]):
                return RoutingKey(kind, parts[2], parts[3], priority)
    raise BadRoutingKey(
        f"routing key {routing_key!r} is not warc_created or <harvest|export>.<start|stop|status>.<platform>.<type>"
        f" (harvest.start and harvest.status may end in .{PRIORITY})"
    )


def status_key_for(routing_key: str) -> str:
    """harvest.start.x.y -> harvest.status.x.y (harvest.start.x.y.priority -> harvest.status.x.y.priority);
    export.start.x.y -> export.status.x.y."""
    return str(parse(routing_key).status_key())


def sfm_keys(kind: str, platform: str, type_: str) -> list[str]:
    """The keys SFM 3.x publishes this kind of message for `type_` on that the binding
    `<noun>.<verb>.<platform>.*` of swath's service for `platform` misses: the service binds them as well."""
    name = sfm_names().get(type_)
    if name is None:
        return []
    sfm_platform = name.platform or platform
    keys = [] if sfm_platform == platform else [RoutingKey(kind, sfm_platform, type_)]
    if name.priority and kind == "harvest_start":
        keys.append(RoutingKey(kind, sfm_platform, type_, priority=True))
    return [str(k) for k in keys]
