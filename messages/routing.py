"""Routing keys of the SFM messaging spec, built and parsed in one place."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


class BadRoutingKey(ValueError):
    """The routing key is not one of the spec's forms."""


@dataclass(frozen=True)
class RoutingKey:
    kind: str  # one of KINDS or "warc_created"
    platform: str = ""
    type: str = ""

    def __str__(self) -> str:
        if self.kind == WARC_CREATED:
            return WARC_CREATED
        noun, verb = KINDS[self.kind]
        return f"{noun}.{verb}.{self.platform}.{self.type}"

    def status_key(self) -> "RoutingKey":
        """The key a status about this start/stop is published on."""
        noun, _ = KINDS[self.kind]
        return RoutingKey(f"{noun}_status", self.platform, self.type)


def key(kind: str, platform: str, type_: str) -> str:
    for part in (platform, type_):
        if not _PART.match(part):
            raise BadRoutingKey(f"routing key part {part!r} must be letters, digits, '_' or '-'")
    return str(RoutingKey(kind, platform, type_))


def parse(routing_key: str) -> RoutingKey:
    if routing_key == WARC_CREATED:
        return RoutingKey(WARC_CREATED)
    parts = routing_key.split(".")
    if len(parts) == 4:
        for kind, pair in KINDS.items():
            if tuple(parts[:2]) == pair and all(_PART.match(p) for p in parts[2:]):
                return RoutingKey(kind, parts[2], parts[3])
    raise BadRoutingKey(
        f"routing key {routing_key!r} is not warc_created or <harvest|export>.<start|stop|status>.<platform>.<type>"
    )


def status_key_for(routing_key: str) -> str:
    """harvest.start.x.y -> harvest.status.x.y; export.start.x.y -> export.status.x.y."""
    return str(parse(routing_key).status_key())
