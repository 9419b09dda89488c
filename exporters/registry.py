"""Export type -> platform, item sources (the first one is the primary table) and service name.

Each platform declares its export types once (`PLATFORM` in its data-only declaration module,
swath.core.platforms); a lookup imports only declarations and that type's item sources, never a harvester.
The worker runtime and the CLI look export types up here; the routing key is export.start.<platform>.<type>.
Type names are SFM's harvest type names, so SFM requesters work unchanged.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from swath.core import discovery
from swath.core.errors import SwathError
from swath.core.platforms import ExportKind, Platform
from swath.exporters.items import Source
from swath.messages import codes, routing


@dataclass(frozen=True)
class ExportType:
    name: str
    platform: str
    service: str
    # Item sources read for this type; a response is read by the first whose URL markers match.
    # Twitter types read both API versions, so a collection holding both exports one table per version.
    sources: tuple[type[Source], ...]
    # True for tables of the current state (datasets, LRs, Xesam payloads): the latest copy of each item
    # only, deletions left out, whatever the export's `dedupe` says.
    current_state: bool = False

    @property
    def primary_table(self) -> str:
        return self.sources[0].table.name


class UnknownExportType(SwathError, KeyError):
    """No exporter here handles this export type."""

    code = codes.UNKNOWN_TYPE


def export_types() -> list[str]:
    """Every declared export type, by platform name, each platform's in the order it declares them."""
    return [kind.name for platform in discovery.platforms() for kind in platform.export_types]


def lookup(name: str) -> ExportType:
    platform = discovery.owner(name, lambda p: [kind.name for kind in p.export_types])
    kind = platform.export_kind(name) if platform is not None else None
    if platform is None or kind is None:
        raise UnknownExportType(f"no exporter for export type {name!r}; known: {', '.join(export_types())}")
    return _export_type(platform, kind)


def _export_type(platform: Platform, kind: ExportKind) -> ExportType:
    return ExportType(name=kind.name, platform=platform.name, service=platform.exporter_service,
                      sources=tuple(_source(target) for target in kind.sources), current_state=kind.current_state)


def _source(target: str) -> type[Source]:
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    if not (isinstance(cls, type) and issubclass(cls, Source)):
        raise TypeError(f"{target} is not an exporters.items.Source")
    return cls


def platform_of(name: str) -> str:
    return lookup(name).platform


def start_routing_key(name: str) -> str:
    return routing.key("export_start", platform_of(name), name)
