"""Harvest types whose platform API is gone (SFM 2.x types still in SFM sites' schedules): refused with code
api_retired and the type to use instead, not the puzzling unknown_type. Their old WARCs still export."""

from __future__ import annotations

from dataclasses import dataclass

from swath.messages.routing import PRIORITY


@dataclass(frozen=True)
class Retired:
    platform: str  # the platform SFM put in the routing key
    gone: str  # what went away
    use: str = ""  # the type to harvest with instead; empty: none
    priority: bool = False  # SFM 2.x sent it with `.priority` too (PRIORITY_HARVEST_TYPES)


RETIRED: dict[str, Retired] = {
    "twitter_user_timeline": Retired("twitter", "Twitter API v1.1 user timelines", "twitter_user_timeline_2",
                                     priority=True),
    "twitter_filter": Retired("twitter", "Twitter API v1.1 statuses/filter streams", "twitter_filter_stream"),
    "weibo_timeline": Retired("weibo", "Weibo's open API for third-party timelines"),
    "weibo_search": Retired("weibo", "Weibo's open API for topic searches"),
}


def refusal(type_name: object) -> str | None:
    """Why a harvest of this type is refused, naming what to use instead; None when it is not retired."""
    retired = RETIRED.get(type_name) if isinstance(type_name, str) else None
    if retired is None:
        return None
    instead = (f"harvest with {retired.use} instead (a collection of that type, with its credentials)"
               if retired.use else "no harvest type replaces it; its collections' WARCs still export")
    return f"harvest type {type_name!r} is retired: {retired.gone} are gone; {instead}"


def start_keys(platform: str) -> list[str]:
    """The harvest.start keys SFM sites send retired types of `platform` on, so a worker can answer them."""
    keys = []
    for name, retired in sorted(RETIRED.items()):
        if retired.platform == platform:
            keys.append(f"harvest.start.{platform}.{name}")
            if retired.priority:
                keys.append(f"harvest.start.{platform}.{name}.{PRIORITY}")
    return keys
