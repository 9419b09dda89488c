"""The shapes of the message bodies that swath reads, as the schemas in `schemas/` fix them.

A body is read through one of these only after `validation.validate` passed it: the TypedDict then says what the
schema guarantees (required keys are present, types are right), so the readers need no checks of their own.
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

from swath.core.jsontypes import JSONObject


class IdRef(TypedDict):
    id: str


class SeedBody(TypedDict):
    id: str
    token: NotRequired[str | JSONObject]
    uid: NotRequired[str]


class HarvestStartBody(TypedDict):
    id: str
    type: str
    path: str
    seeds: NotRequired[list[SeedBody]]
    options: NotRequired[JSONObject]
    credentials: NotRequired[dict[str, str | int | float | bool | None]]
    collection_set: NotRequired[IdRef]
    collection: NotRequired[IdRef]


class HarvestStopBody(TypedDict):
    id: str


class WarcBody(TypedDict):
    path: str
    sha1: str
    bytes: int
    id: str
    date_created: str
    date_first: NotRequired[str]
    date_last: NotRequired[str]


class HarvestRef(TypedDict):
    id: str
    type: str


class WarcSeedBody(TypedDict):
    id: str
    uid: NotRequired[str]


class WarcCreatedBody(TypedDict):
    warc: WarcBody
    collection_set: IdRef
    collection: IdRef
    harvest: HarvestRef
    seeds: NotRequired[list[WarcSeedBody]]


class ExportSeedBody(TypedDict):
    id: str
    uid: str | None


class ExportStartBody(TypedDict):
    id: str
    type: str
    path: str
    format: str
    seeds: NotRequired[list[ExportSeedBody]]
    collection: NotRequired[IdRef]
    dedupe: NotRequired[bool]
    segment_size: NotRequired[int | None]
    item_date_start: NotRequired[str]
    item_date_end: NotRequired[str]
    harvest_date_start: NotRequired[str]
    harvest_date_end: NotRequired[str]
    options: NotRequired[JSONObject]


class NoteBody(TypedDict):
    code: str
    message: str
    seed_id: NotRequired[str]


class StatusBody(TypedDict):
    """What harvest and export statuses share (harvest_status.json, export_status.json): the schemas require only
    id and status; swath's own statuses carry every key (model._Status)."""

    id: str
    status: str
    date_started: NotRequired[str]
    date_ended: NotRequired[str]
    infos: NotRequired[list[NoteBody]]
    warnings: NotRequired[list[NoteBody]]
    errors: NotRequired[list[NoteBody]]
    service: NotRequired[str]
    host: NotRequired[str]
    instance: NotRequired[str]


class WarcsCount(TypedDict):
    count: int
    bytes: int


class HarvestStatusBody(StatusBody):
    stats: NotRequired[dict[str, dict[str, int]]]  # per day, per item kind
    token_updates: NotRequired[dict[str, str]]
    uids: NotRequired[dict[str, str]]
    warcs: NotRequired[WarcsCount]
