"""Find the platform declarations through the `swath.platforms` entry points, importing as few as it can.

Built-in platforms are entry points too (pyproject.toml), so a third-party package adds one the same way.
Loading a declaration imports its module, which for the built-in platforms is data only (it imports the
core, not the platform's harvester or client library). A third-party declaration may sit in a heavier
module, so lookups by type still try the platforms whose name starts the type first (`tumblr_blog_posts` ->
`tumblr`) and load the rest only if none of those declares it.
"""

from __future__ import annotations

import functools
import importlib
import logging
import sys
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points

from swath.core.platforms import Platform

ENTRY_POINT_GROUP = "swath.platforms"
DISTRIBUTION = "swath"  # the platforms that ship with swath ("built-in" in listings)

log = logging.getLogger(__name__)


class PlatformUnavailable(LookupError):
    """No platform of that name is installed, or its declaration does not load."""


def installed() -> dict[str, EntryPoint]:
    """Platform name -> its entry point, without importing anything; the first distribution wins a name."""
    return dict(_scan(tuple(sys.path)))


@functools.lru_cache(maxsize=8)
def _scan(path: tuple[str, ...]) -> tuple[tuple[str, EntryPoint], ...]:
    # reading every distribution's metadata takes milliseconds and a worker looks a type up per message;
    # keyed by sys.path, so a distribution added to the path (as tests do) is seen
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep)
    return tuple(sorted(found.items()))


def builtin(name: str) -> bool:
    ep = installed().get(name)
    return ep is not None and ep.dist is not None and ep.dist.name == DISTRIBUTION


def load(name: str) -> Platform:
    """The declaration installed under `name`; PlatformUnavailable (saying why) if it does not load."""
    ep = installed().get(name)
    if ep is None:
        raise PlatformUnavailable(f"no platform named {name!r} is installed")
    return _load(ep.name, ep.value)


@functools.cache
def _load(name: str, target: str) -> Platform:
    module, _, attr = target.partition(":")
    try:
        declared = getattr(importlib.import_module(module), attr)
    except Exception as exc:  # ImportError, AttributeError, a bad declaration: the plugin's fault, said clearly
        raise PlatformUnavailable(f"platform {name!r} ({target}) cannot be loaded: {type(exc).__name__}: {exc}"
                                  ) from None
    if not isinstance(declared, Platform):
        raise PlatformUnavailable(f"platform {name!r}: {target} is not a swath.core.platforms.Platform")
    if declared.name != name:
        raise PlatformUnavailable(f"platform {target} is installed as {name!r} but names itself {declared.name!r}")
    return declared


def platforms() -> list[Platform]:
    """Every installed platform that loads, by name; one that does not is logged and left out."""
    return [p for p in map(_try_load, installed().values()) if p is not None]


def _try_load(ep: EntryPoint) -> Platform | None:
    try:
        return _load(ep.name, ep.value)
    except PlatformUnavailable as exc:  # a broken plugin must not take the other platforms down with it
        log.warning("%s", exc)
        return None


def owner(type_name: str, names: Callable[[Platform], Iterable[str]]) -> Platform | None:
    """The platform whose `names(platform)` include `type_name`, loading the likely ones first."""
    eps = installed()
    for name in _likely_first(type_name, list(eps)):
        platform = _try_load(eps[name])
        if platform is not None and type_name in names(platform):
            return platform
    return None


def _likely_first(type_name: str, names: list[str]) -> list[str]:
    """Platforms whose name is the type or its prefix before a '_' (longest first), then the rest."""
    likely = sorted((n for n in names if type_name == n or type_name.startswith(n + "_")), key=len, reverse=True)
    return likely + [n for n in names if n not in likely]
