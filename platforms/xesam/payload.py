"""Xesam-PMH payloads: the `(ssssta(ss))` struct, its timestamps, and the JSON we store per payload.

On the wire `ListRecords` takes `t mtime`; swath reads it as Unix time in milliseconds (UTC) and the
payload's ISO 8601 timestamp converts to the same scale, so a watermark is exact to the millisecond.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

IFACE_TARGET = "org.freedesktop.xesam.pmh.Target"
IFACE_CRAWLER = "org.freedesktop.xesam.pmh.Crawler"
DEFAULT_TARGET_PATH = "/org/freedesktop/xesam/pmh/Target"
PAYLOAD_SIG = "(ssssta(ss))"
UPDATE_RECORDS_SIG = "a" + PAYLOAD_SIG
LIST_RECORDS_SIG = "tasasasuo"
NORMAL, DELETED = 1, 2
ERR_BAD_PAYLOAD = "org.freedesktop.xesam.pmh.Error.BadPayload"
ERR_INVALIDATED = "org.freedesktop.xesam.pmh.Error.Invalidated"
RECORD_CONTENT_TYPE = "application/vnd.swath.xesam-pmh+json"


class BadPayload(ValueError):
    """A payload that does not follow the spec (state, timestamp, empty uri)."""


def ms_to_iso(ms: int) -> str:
    """Milliseconds since the epoch -> `2026-11-21T23:39:14.123Z`."""
    stamp = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def iso_to_ms(text: str) -> int:
    """An ISO 8601 timestamp (a missing offset means UTC) -> milliseconds since the epoch."""
    try:
        stamp = dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise BadPayload(f"timestamp {text!r} is not ISO 8601") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=dt.UTC)
    return round(stamp.timestamp() * 1000)


@dataclass(frozen=True, kw_only=True)
class Payload:
    uri: str
    timestamp: str
    content_cat: str
    source_cat: str
    state: int
    fields: tuple[tuple[str, str], ...]

    @property
    def mtime(self) -> int:
        return iso_to_ms(self.timestamp)

    @property
    def deleted(self) -> bool:
        return self.state == DELETED

    def to_wire(self) -> tuple[str, str, str, str, int, list[tuple[str, str]]]:
        return (self.uri, self.timestamp, self.content_cat, self.source_cat, self.state, list(self.fields))

    @classmethod
    def from_wire(cls, raw: Any) -> Payload:
        """Check one already-unmarshalled `(ssssta(ss))`; raises BadPayload."""
        uri, timestamp, content_cat, source_cat, state, body = raw
        if not uri:
            raise BadPayload("payload has an empty uri")
        if state not in (NORMAL, DELETED):
            raise BadPayload(f"payload {uri!r} has state {state}; expected 1 (NORMAL) or 2 (DELETED)")
        iso_to_ms(timestamp)
        return cls(uri=uri, timestamp=timestamp, content_cat=content_cat, source_cat=source_cat, state=state,
                   fields=tuple((str(k), str(v)) for k, v in body))

    def record(self, *, target: dict[str, str], generation: int, harvest_id: str, received: str) -> dict[str, object]:
        """The JSON body of the WARC record for this payload (shape documented in docs/xesam.md)."""
        return {
            "kind": "payload",
            "target": target,
            "generation": generation,
            "harvest_id": harvest_id,
            "received": received,
            "uri": self.uri,
            "timestamp": self.timestamp,
            "mtime": self.mtime,
            "content_cat": self.content_cat,
            "source_cat": self.source_cat,
            "state": self.state,
            "deleted": self.deleted,
            "fields": [list(pair) for pair in self.fields],
        }
