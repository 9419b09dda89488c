"""Harvest types whose platform API is gone (SFM 2.x types still in SFM sites' schedules): refused with code
api_retired and the type to use instead, not the puzzling unknown_type. Their old WARCs still export."""

from __future__ import annotations

from swath.core import discovery
from swath.core.platforms import RetiredKind
from swath.messages.routing import PRIORITY


def retired_types() -> dict[str, RetiredKind]:
    """Every retired harvest type, from the platform declarations (`Platform.retired_types`)."""
    return {kind.name: kind for platform in discovery.platforms() for kind in platform.retired_types}


def _retired(type_name: str) -> RetiredKind | None:
    # the platform the type's name starts with is tried first (discovery.owner): `weibo_search` -> weibo
    platform = discovery.owner(type_name, lambda p: [kind.name for kind in p.retired_types])
    return next(kind for kind in platform.retired_types if kind.name == type_name) if platform else None


def refusal(type_name: object) -> str | None:
    """Why a harvest of this type is refused, naming what to use instead; None when it is not retired."""
    retired = _retired(type_name) if isinstance(type_name, str) else None
    if retired is None:
        return None
    instead = (f"harvest with {retired.use} instead (a collection of that type, with its credentials)"
               if retired.use else "no harvest type replaces it; its collections' WARCs still export")
    return f"harvest type {type_name!r} is retired: {retired.gone} are gone; {instead}"


def start_keys(platform: str) -> list[str]:
    """The harvest.start keys SFM sites send retired types of `platform` on, so a worker can answer them."""
    try:
        declared = discovery.load(platform).retired_types
    except discovery.PlatformUnavailable:  # a backend of `swath.backends`, or a platform that does not load
        return []
    keys = []
    for retired in sorted(declared, key=lambda kind: kind.name):
        keys.append(f"harvest.start.{platform}.{retired.name}")
        if retired.priority:
            keys.append(f"harvest.start.{platform}.{retired.name}.{PRIORITY}")
    return keys
