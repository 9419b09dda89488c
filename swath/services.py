"""The worker services swath runs: one harvester and one exporter per platform, built from the platform declarations."""

from __future__ import annotations

import functools
import importlib
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from swath.core import discovery
from swath.core.config import Config
from swath.core.jobs import Job, JobContext
from swath.core.jsontypes import JSONObject
from swath.core.platforms import Platform
from swath.messages import retired
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


def _lazy_job(target: str) -> Job:
    module, _, name = target.partition(":")

    def job(body: JSONObject, *, routing_key: str, ctx: JobContext) -> None:
        getattr(importlib.import_module(module), name)(body, routing_key=routing_key, ctx=ctx)

    return job


def _lazy_call(target: str) -> Callable[[Config], None]:
    module, _, name = target.partition(":")
    return lambda config: getattr(importlib.import_module(module), name)(config)


def _per_platform(entries: list[_Entry], *, noun: str, role: str, job: str, warm_up: str | None = None,
                  platforms: tuple[str, ...] = ()) -> dict[str, ServiceSpec]:
    """One service per platform: `<platform>_<role>` consuming `<noun>.start.<platform>.*` and the keys
    SFM 3.x sends its types on (messages.routing.sfm_names, from the declarations: `twitter2`, `.priority`). `platforms`
    (SWATH_PLATFORMS): only these platforms and types; a platform with some types only binds their keys alone."""
    by_platform: dict[str, list[_Entry]] = defaultdict(list)
    for entry in entries:
        by_platform[entry.platform].append(entry)
    services = {}
    for platform, every in sorted(by_platform.items()):
        types = [t for t in every if not platforms or platform in platforms or t.name in platforms]
        if not types:
            continue
        names = frozenset(t.name for t in types)
        bindings = _bindings(noun, "start", platform, names, every)
        if noun == "harvest" and len(types) == len(every):  # the whole platform: answer its retired types too
            bindings += [key for key in retired.start_keys(platform) if f"{key.rpartition('.')[0]}.*" not in bindings]

        def accepts(body: JSONObject, names: frozenset[str] = names, platform: str = platform) -> str | None:
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
            bindings=bindings,
            stop_bindings=_bindings(noun, "stop", platform, names, every) if noun == "harvest" else [],
            unbind=[key for key in _every_key(noun, platform, every) if key not in bindings],
            job=_lazy_job(job),
            accepts=accepts,
            concurrency=STREAM_CONCURRENCY if any(t.stream for t in types) else 1,
            warm_up=_lazy_call(warm_up) if warm_up else None,
        )
    return services


def _bindings(noun: str, verb: str, platform: str, names: frozenset[str], every: list[_Entry]) -> list[str]:
    """The keys for `names` of the platform's types `every`: the platform's wildcard when all are named, else
    one key each (so the types left out reach another suite's workers alone), and SFM 3.x's keys of each."""
    if names == frozenset(t.name for t in every):
        own = [f"{noun}.{verb}.{platform}.*"]
    else:
        own = [f"{noun}.{verb}.{platform}.{name}" for name in sorted(names)]
    return own + [key for name in sorted(names) for key in sfm_keys(f"{noun}_{verb}", platform, name)]


def _every_key(noun: str, platform: str, every: list[_Entry]) -> list[str]:
    """Every start key a service of this platform may have bound, whichever SWATH_PLATFORMS it ran with."""
    per_type = [f"{noun}.start.{platform}.{t.name}" for t in every]
    retired_keys = retired.start_keys(platform) if noun == "harvest" else []
    return [f"{noun}.start.{platform}.*", *per_type, *retired_keys,
            *_bindings(noun, "start", platform, frozenset(t.name for t in every), every)[1:]]


def harvester_services(platforms: tuple[str, ...] = ()) -> dict[str, ServiceSpec]:
    from swath.harvesters.registry import harvester_types

    return _harvester_services(harvester_types(), platforms)


def _harvester_services(types: list[HarvesterType], platforms: tuple[str, ...] = ()) -> dict[str, ServiceSpec]:
    entries = [_Entry(t.name, t.platform, functools.partial(_harvester_service, t), t.stream) for t in types]
    return _per_platform(entries, noun="harvest", role="harvester", job="swath.harvest_job:run_harvest",
                         platforms=platforms)


def _harvester_service(htype: HarvesterType) -> str:
    # an entry-point backend names its service in its class: loaded only for those
    return htype.service or htype.load().service


def exporter_services(platforms: tuple[str, ...] = ()) -> dict[str, ServiceSpec]:
    return _exporter_services(discovery.platforms(), platforms)


def _exporter_services(declared: list[Platform], platforms: tuple[str, ...] = ()) -> dict[str, ServiceSpec]:
    entries = [_Entry(kind.name, p.name, functools.partial(str, p.exporter_service))
               for p in declared for kind in p.export_types]
    return _per_platform(entries, noun="export", role="exporter", job="swath.export_index:run_export",
                         warm_up="swath.exporters.reader:start_processes", platforms=platforms)


def all_services(platforms: tuple[str, ...] = ()) -> dict[str, ServiceSpec]:
    """Every worker service; `platforms` (SWATH_PLATFORMS): those serving these platforms and types only."""
    return {**harvester_services(platforms), **exporter_services(platforms)}


def unknown_platforms(platforms: tuple[str, ...]) -> list[str]:
    """The SWATH_PLATFORMS entries that name neither a platform nor a harvest or export type."""
    if not platforms:
        return []  # nothing to check: and listing the types would import every platform
    from swath.exporters.registry import export_types
    from swath.harvesters.registry import harvester_types

    known = set(discovery.installed()) | {t.name for t in harvester_types()} | {t.platform for t in harvester_types()}
    known |= set(export_types())
    return [name for name in platforms if name not in known]


def check_platforms(platforms: tuple[str, ...]) -> None:
    """UnknownService naming the SWATH_PLATFORMS entries that are neither a platform nor a type."""
    if unknown := unknown_platforms(platforms):
        raise UnknownService(f"SWATH_PLATFORMS names {', '.join(unknown)}: neither a platform nor a type "
                             "(`swath harvest types`, `swath export types` list them)")


def service(name: str, platforms: tuple[str, ...] = ()) -> ServiceSpec:
    """The worker service `name`; a platform's own worker loads that platform only. With `platforms`
    (SWATH_PLATFORMS) it serves only those of its types, and a worker serving none of them is refused."""
    check_platforms(platforms)
    found = _platform_service(name, platforms)
    if found is not None:
        return found
    services = all_services(platforms)
    try:
        return services[name]
    except KeyError:
        if platforms and name in all_services():
            raise UnknownService(f"{name} serves nothing SWATH_PLATFORMS ({', '.join(platforms)}) enables; "
                                 "add its platform there or do not run it") from None
        raise UnknownService(f"no worker named {name!r}; `swath worker --list` names them: "
                             f"{', '.join(sorted(services))}") from None


def _platform_service(name: str, platforms: tuple[str, ...] = ()) -> ServiceSpec | None:
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
        return _harvester_services(platform_types(platform), platforms).get(name)
    return _exporter_services([platform], platforms).get(name)
