"""The worker services swath runs: one harvester per platform, one exporter, built from the registries."""

from __future__ import annotations

import importlib
from collections import defaultdict
from typing import Any, Callable

from messages.worker import ServiceSpec

# Streams run for hours; a stream worker holds this many at once (prefetch = concurrency).
STREAM_CONCURRENCY = 4


class UnknownService(LookupError):
    pass


def _job(target: str) -> Any:
    module, _, name = target.partition(":")
    return getattr(importlib.import_module(module), name)


def _lazy_job(target: str) -> Callable[..., None]:
    def job(body: dict[str, Any], *, routing_key: str, ctx: Any) -> None:
        _job(target)(body, routing_key=routing_key, ctx=ctx)

    return job


def harvester_services() -> dict[str, ServiceSpec]:
    from harvesters.registry import harvester_types

    by_platform: dict[str, list] = defaultdict(list)
    for harvest_type in harvester_types():
        by_platform[harvest_type.platform].append(harvest_type)
    services = {}
    for platform, types in sorted(by_platform.items()):
        names = frozenset(t.name for t in types)
        service_name = types[0].load().service

        def accepts(body: dict[str, Any], names: frozenset[str] = names, platform: str = platform) -> str | None:
            if body.get("type") in names:
                return None
            return (f"the {platform} harvester does not handle harvest type {body.get('type')!r}; "
                    f"it handles {', '.join(sorted(names))}")

        services[f"{platform}_harvester"] = ServiceSpec(
            name=f"{platform}_harvester",
            service=service_name,
            bindings=[f"harvest.start.{platform}.*"],
            stop_bindings=[f"harvest.stop.{platform}.*"],
            job=_lazy_job("harvesters.base:run_harvest"),
            accepts=accepts,
            concurrency=STREAM_CONCURRENCY if any(t.stream for t in types) else 1,
        )
    return services


def exporter_services() -> dict[str, ServiceSpec]:
    from exporters.registry import export_types, lookup

    by_platform: dict[str, list] = defaultdict(list)
    for name in export_types():
        by_platform[lookup(name).platform].append(lookup(name))
    services = {}
    for platform, types in sorted(by_platform.items()):
        names = frozenset(t.name for t in types)

        def accepts(body: dict[str, Any], names: frozenset[str] = names, platform: str = platform) -> str | None:
            if body.get("type") in names:
                return None
            return (f"the {platform} exporter does not handle export type {body.get('type')!r}; "
                    f"it handles {', '.join(sorted(names))}")

        services[f"{platform}_exporter"] = ServiceSpec(
            name=f"{platform}_exporter",
            service=types[0].service,
            bindings=[f"export.start.{platform}.*"],
            job=_lazy_job("exporters.base:run_export"),
            accepts=accepts,
        )
    return services


def all_services() -> dict[str, ServiceSpec]:
    return {**harvester_services(), **exporter_services()}


def service(name: str) -> ServiceSpec:
    services = all_services()
    try:
        return services[name]
    except KeyError:
        raise UnknownService(f"no worker named {name!r}; `swath worker --list` names them: "
                             f"{', '.join(sorted(services))}") from None
