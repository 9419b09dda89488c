"""The worker services swath runs: one harvester and one exporter per platform, built from the platform declarations."""

from __future__ import annotations

import functools
import importlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from swath.core import discovery
from swath.core.platforms import Platform
from swath.messages.routing import sfm_keys
from swath.messages.worker import ServiceSpec

if TYPE_CHECKING:
    from swath.harvesters.registry import HarvesterType

# Streams run for hours; a stream worker holds this many at once (prefetch = concurrency).
STREAM_CONCURRENCY = 4


class UnknownService(LookupError):
    pass


@dataclass(frozen=True)
class _Entry:
    """One harvest or export type as a worker service needs it."""

    name: str
    platform: str
    service: Callable[[], str]  # human service name, looked up lazily (imports the platform module)
    stream: bool = False


def _lazy_job(target: str) -> Callable[..., None]:
    module, _, name = target.partition(":")

    def job(body: dict[str, Any], *, routing_key: str, ctx: Any) -> None:
        getattr(importlib.import_module(module), name)(body, routing_key=routing_key, ctx=ctx)

    return job


def _lazy_call(target: str) -> Callable[[Any], None]:
    module, _, name = target.partition(":")
    return lambda config: getattr(importlib.import_module(module), name)(config)


def _per_platform(entries: list[_Entry], *, noun: str, role: str, job: str,
                  warm_up: str | None = None) -> dict[str, ServiceSpec]:
    """One service per platform: `<platform>_<role>` consuming `<noun>.start.<platform>.*` and the keys
    SFM 3.x sends its types on (messages.routing.SFM_NAMES: `twitter2`, `.priority`)."""
    by_platform: dict[str, list[_Entry]] = defaultdict(list)
    for entry in entries:
        by_platform[entry.platform].append(entry)
    services = {}
    for platform, types in sorted(by_platform.items()):
        names = frozenset(t.name for t in types)

        def accepts(body: dict[str, Any], names: frozenset[str] = names, platform: str = platform) -> str | None:
            kind = body.get("type")
            if kind is None:
                return f"'type' is required: the {noun} type to run, e.g. {min(names)!r}"
            if not isinstance(kind, str):  # a list or object would not even hash; never quote the value
                return f"'type' must be a string naming a {noun} type, not a JSON {type(kind).__name__}"
            if kind in names:
                return None
            return (f"the {platform} {role} does not handle {noun} type {body.get('type')!r}; "
                    f"it handles {', '.join(sorted(names))}")

        name = f"{platform}_{role}"
        services[name] = ServiceSpec(
            name=name,
            service=types[0].service(),
            bindings=[f"{noun}.start.{platform}.*", *_sfm_bindings(f"{noun}_start", platform, names)],
            stop_bindings=[f"{noun}.stop.{platform}.*", *_sfm_bindings(f"{noun}_stop", platform, names)]
            if noun == "harvest" else [],
            job=_lazy_job(job),
            accepts=accepts,
            concurrency=STREAM_CONCURRENCY if any(t.stream for t in types) else 1,
            warm_up=_lazy_call(warm_up) if warm_up else None,
        )
    return services


def _sfm_bindings(kind: str, platform: str, names: frozenset[str]) -> list[str]:
    return [key for name in sorted(names) for key in sfm_keys(kind, platform, name)]


def harvester_services() -> dict[str, ServiceSpec]:
    from swath.harvesters.registry import harvester_types

    return _harvester_services(harvester_types())


def _harvester_services(types: list[HarvesterType]) -> dict[str, ServiceSpec]:
    entries = [_Entry(t.name, t.platform, functools.partial(_harvester_service, t), t.stream) for t in types]
    return _per_platform(entries, noun="harvest", role="harvester", job="swath.harvesters.run:run_harvest")


def _harvester_service(htype: HarvesterType) -> str:
    # an entry-point backend names its service in its class: loaded only for those
    return htype.service or htype.load().service


def exporter_services() -> dict[str, ServiceSpec]:
    return _exporter_services(discovery.platforms())


def _exporter_services(platforms: list[Platform]) -> dict[str, ServiceSpec]:
    entries = [_Entry(kind.name, p.name, functools.partial(str, p.exporter_service))
               for p in platforms for kind in p.export_types]
    return _per_platform(entries, noun="export", role="exporter", job="swath.export_index:run_export",
                         warm_up="swath.exporters.reader:start_processes")


def all_services() -> dict[str, ServiceSpec]:
    return {**harvester_services(), **exporter_services()}


def service(name: str) -> ServiceSpec:
    """The worker service `name`; a platform's own worker loads that platform only."""
    found = _platform_service(name)
    if found is not None:
        return found
    services = all_services()
    try:
        return services[name]
    except KeyError:
        raise UnknownService(f"no worker named {name!r}; `swath worker --list` names them: "
                             f"{', '.join(sorted(services))}") from None


def _platform_service(name: str) -> ServiceSpec | None:
    """`<platform>_harvester` / `<platform>_exporter` of a declared platform, from its declaration alone."""
    from swath.harvesters.registry import platform_types

    platform_name, _, role = name.rpartition("_")
    if role not in ("harvester", "exporter") or platform_name not in discovery.installed():
        return None
    try:
        platform = discovery.load(platform_name)
    except discovery.PlatformUnavailable:
        return None  # the full listing says what is there
    if role == "harvester":
        return _harvester_services(platform_types(platform)).get(name)
    return _exporter_services([platform]).get(name)
