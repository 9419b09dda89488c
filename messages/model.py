"""Dataclasses for each SFM message, with builders (to_dict) and parsers (from_body) that validate."""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self, cast

import orjson

from swath.core.errors import SwathError
from swath.core.jsontypes import JSON, JSONObject
from swath.messages import codes
from swath.messages.bodies import ExportStartBody, HarvestStartBody, HarvestStopBody, WarcCreatedBody
from swath.messages.validation import InvalidMessage, validate

RUNNING = "running"
COMPLETED_SUCCESS = "completed success"
COMPLETED_FAILURE = "completed failure"


_second_iso: tuple[int, str] = (-1, "")


def iso_of_micros(micros: int) -> str:
    """`datetime.fromtimestamp(micros / 1e6, UTC).isoformat()` of whole microseconds since the epoch, its
    seconds formatted once a second (a harvest stamps every item record: datetime's costs 1.5 µs a call)."""
    global _second_iso
    second, micro = divmod(micros, 1_000_000)
    last = _second_iso  # one read: another thread may replace it
    if last[0] != second:
        text = dt.datetime.fromtimestamp(second, dt.UTC).replace(tzinfo=None).isoformat()
        last = _second_iso = (second, text)
    return f"{last[1]}.{micro:06d}+00:00" if micro else f"{last[1]}+00:00"


def now_iso() -> str:
    """UTC timestamp in the spec's ISO form, with an explicit offset: `datetime.now(UTC).isoformat()`."""
    return iso_of_micros(time.time_ns() // 1000)  # the clock datetime.now reads, floored to µs as it does


def decode_body(body: bytes | str) -> JSON:
    """Parse a JSON message body or raise InvalidMessage(not_json)."""
    try:
        parsed: JSON = orjson.loads(body)
        return parsed
    except orjson.JSONDecodeError as exc:
        raise InvalidMessage(f"message body is not JSON: {exc}", code=codes.NOT_JSON) from None


def encode_body(body: Mapping[str, object]) -> bytes:
    return orjson.dumps(body)


@dataclass(frozen=True)
class Note:
    """One entry of infos/warnings/errors."""

    code: str
    message: str
    seed_id: str | None = None

    @classmethod
    def of(cls, error: BaseException, *, seed_id: str | None = None) -> Note:
        """The note for an error: a SwathError's own code, message and seed; anything else is unknown_error
        with its type named (the message of a foreign exception may be all there is to go on)."""
        if isinstance(error, SwathError):
            return cls(code=error.code, message=error.message, seed_id=error.seed_id or seed_id)
        return cls(code=codes.UNKNOWN_ERROR, message=f"{type(error).__name__}: {error}", seed_id=seed_id)

    def to_dict(self) -> dict[str, str]:
        out = {"code": self.code, "message": self.message}
        if self.seed_id is not None:
            out["seed_id"] = self.seed_id
        return out


@dataclass(frozen=True)
class Seed:
    id: str
    token: str | JSONObject | None = None  # the schema: a string or an object (a search with its parameters)
    uid: str | None = None


@dataclass(kw_only=True)
class HarvestStart:
    id: str
    type: str
    path: str
    seeds: list[Seed] = field(default_factory=list)
    options: dict[str, Any] = field(default_factory=dict)
    credentials: dict[str, str | int | float | bool | None] = field(default_factory=dict, repr=False)  # never in logs
    collection_set_id: str = ""
    collection_id: str = ""
    raw: JSONObject = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, given: object) -> HarvestStart:
        validate("harvest_start", given)
        body = cast(HarvestStartBody, given)
        return cls(
            id=body["id"],
            type=body["type"],
            path=body["path"],
            seeds=[Seed(s["id"], s.get("token"), s.get("uid")) for s in body.get("seeds", [])],
            options=dict(body.get("options") or {}),
            credentials=dict(body.get("credentials") or {}),
            collection_set_id=body["collection_set"]["id"] if "collection_set" in body else "",
            collection_id=body["collection"]["id"] if "collection" in body else "",
            raw=cast(JSONObject, given),
        )


@dataclass(kw_only=True)
class HarvestStop:
    id: str

    @classmethod
    def from_dict(cls, body: object) -> HarvestStop:
        validate("harvest_stop", body)
        return cls(id=cast(HarvestStopBody, body)["id"])


@dataclass(kw_only=True)
class Origin:
    """service/host/instance: what performed the work."""

    service: str
    host: str
    instance: str = field(default_factory=lambda: str(os.getpid()))


@dataclass(kw_only=True)
class _Status:
    """What harvest and export statuses share: who, when, and the infos/warnings/errors."""

    id: str
    status: str
    origin: Origin
    date_started: str
    date_ended: str | None = None
    infos: list[Note] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    errors: list[Note] = field(default_factory=list)

    @classmethod
    def refused(cls, *, id: str, origin: Origin, code: str, message: str) -> Self:
        """The one status of work that could not begin: `completed failure`, started and ended now."""
        now = now_iso()
        return cls(id=id, status=COMPLETED_FAILURE, origin=origin, date_started=now, date_ended=now,
                   errors=[Note(code, message)])

    def _common(self) -> dict[str, object]:
        body: dict[str, object] = {
            "id": self.id,
            "status": self.status,
            "date_started": self.date_started,
            "infos": [n.to_dict() for n in self.infos],
            "warnings": [n.to_dict() for n in self.warnings],
            "errors": [n.to_dict() for n in self.errors],
            "service": self.origin.service,
            "host": self.origin.host,
            "instance": self.origin.instance,
        }
        if self.date_ended is not None:
            body["date_ended"] = self.date_ended
        return body


@dataclass(kw_only=True)
class HarvestStatus(_Status):
    stats: dict[str, dict[str, int]] = field(default_factory=dict)
    token_updates: dict[str, str] = field(default_factory=dict)
    uids: dict[str, str] = field(default_factory=dict)
    warcs_count: int = 0
    warcs_bytes: int = 0

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {
            **self._common(),
            "stats": self.stats,
            "token_updates": self.token_updates,
            "uids": self.uids,
            "warcs": {"count": self.warcs_count, "bytes": self.warcs_bytes},
        }
        validate("harvest_status", body)
        return body


@dataclass(kw_only=True)
class WarcCreated:
    path: str
    sha1: str
    bytes: int
    warc_id: str
    date_created: str
    collection_set_id: str
    collection_id: str
    harvest_id: str
    harvest_type: str
    # swath's optional fields (SFM sends none): the harvest's seeds (None: not said) and its records' dates
    seeds: list[Seed] | None = None
    date_first: str | None = None
    date_last: str | None = None

    def to_dict(self) -> dict[str, object]:
        warc: dict[str, object] = {"path": self.path, "sha1": self.sha1, "bytes": self.bytes, "id": self.warc_id,
                "date_created": self.date_created}
        if self.date_first and self.date_last:
            warc.update(date_first=self.date_first, date_last=self.date_last)
        body: dict[str, object] = {
            "warc": warc,
            "collection_set": {"id": self.collection_set_id},
            "collection": {"id": self.collection_id},
            "harvest": {"id": self.harvest_id, "type": self.harvest_type},
        }
        if self.seeds is not None:
            body["seeds"] = [{"id": s.id, **({"uid": s.uid} if s.uid else {})} for s in self.seeds]
        validate("warc_created", body)
        return body

    @classmethod
    def from_dict(cls, given: object) -> WarcCreated:
        validate("warc_created", given)
        body = cast(WarcCreatedBody, given)
        warc = body["warc"]
        return cls(
            path=warc["path"],
            sha1=warc["sha1"],
            bytes=warc["bytes"],
            warc_id=warc["id"],
            date_created=warc["date_created"],
            collection_set_id=body["collection_set"]["id"],
            collection_id=body["collection"]["id"],
            harvest_id=body["harvest"]["id"],
            harvest_type=body["harvest"]["type"],
            seeds=[Seed(s["id"], None, s.get("uid")) for s in body["seeds"]] if "seeds" in body else None,
            date_first=warc.get("date_first"),
            date_last=warc.get("date_last"),
        )


@dataclass(kw_only=True)
class ExportStart:
    id: str
    type: str
    path: str
    format: str
    seeds: list[Seed] = field(default_factory=list)
    collection_id: str | None = None
    dedupe: bool = False
    segment_size: int | None = None
    item_date_start: dt.datetime | None = None
    item_date_end: dt.datetime | None = None
    harvest_date_start: dt.datetime | None = None
    harvest_date_end: dt.datetime | None = None
    skip_unreadable: bool = False  # options.skip_unreadable: unreadable bodies are a warning, not a failure
    raw: JSONObject = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, given: object) -> ExportStart:
        validate("export_start", given)
        body = cast(ExportStartBody, given)
        return cls(
            id=body["id"],
            type=body["type"],
            path=body["path"],
            format=body["format"],
            seeds=[Seed(s["id"], None, s["uid"]) for s in body.get("seeds", [])],
            collection_id=body["collection"]["id"] if "collection" in body else None,
            dedupe=bool(body.get("dedupe", False)),
            segment_size=body.get("segment_size"),
            item_date_start=parse_datetime(body.get("item_date_start"), field_name="item_date_start"),
            item_date_end=parse_datetime(body.get("item_date_end"), field_name="item_date_end"),
            harvest_date_start=parse_datetime(body.get("harvest_date_start"), field_name="harvest_date_start"),
            harvest_date_end=parse_datetime(body.get("harvest_date_end"), field_name="harvest_date_end"),
            skip_unreadable=bool((body.get("options") or {}).get("skip_unreadable", False)),
            raw=cast(JSONObject, given),
        )


@dataclass(kw_only=True)
class ExportStatus(_Status):
    extra: dict[str, object] = field(default_factory=dict)  # e.g. progress counts, files written

    def to_dict(self) -> dict[str, object]:
        body: dict[str, object] = {**self.extra, **self._common()}
        validate("export_status", body)
        return body


def parse_datetime(value: str | None, *, field_name: str = "date") -> dt.datetime | None:
    """ISO 8601 -> aware datetime; naive values are taken as UTC (SFM sends naive UTC).

    Raises InvalidMessage(schema_invalid) for a date the schema's pattern lets through but the calendar
    does not have (month 13, February 30th, year 0)."""
    if value is None:
        return None
    try:
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError as exc:
        raise InvalidMessage(f"at {field_name}: {value!r} is not a real date ({exc})",
                             code=codes.SCHEMA_INVALID) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=dt.UTC)
