"""An SFM site's database, read-only (sfm-ui's Django models: tables `auth_group`, `ui_collectionset`,
`ui_collection`, `ui_seed`, `ui_credential`, `ui_harvest`, `ui_harveststat`, `ui_warc`), for `swath sfm import`:
the counts `--dry-run` reports, and the rows the import brings into swath's store (swath/sfm_bring.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, column, create_engine, func, make_url, select, table
from sqlalchemy.exc import ArgumentError, ProgrammingError, SQLAlchemyError

from swath.core.errors import SwathError
from swath.messages import codes, retired
from swath.store.db import StoreError, installed_driver
from swath.store.dberrors import classify

_GROUPS = table("auth_group", column("id"), column("name"))
_COLLECTION_SETS = table("ui_collectionset", column("id"), column("collection_set_id"), column("group_id"),
                         column("name"), column("description"))
_COLLECTIONS = table("ui_collection", column("id"), column("collection_id"), column("collection_set_id"),
                     column("credential_id"), column("harvest_type"), column("name"), column("is_on"),
                     column("is_active"), column("schedule_minutes"), column("harvest_options"), column("end_date"))
_SEEDS = table("ui_seed", column("id"), column("collection_id"), column("seed_id"), column("token"), column("uid"),
               column("is_active"))
_CREDENTIALS = table("ui_credential", column("id"), column("token"))
_HARVESTS = table("ui_harvest", column("id"), column("harvest_id"), column("collection_id"), column("harvest_type"),
                  column("status"), column("date_requested"), column("date_started"), column("date_ended"),
                  column("warcs_count"), column("warcs_bytes"))
_STATS = table("ui_harveststat", column("harvest_id"), column("harvest_date"), column("item"), column("count"))
_WARCS = table("ui_warc", column("id"), column("harvest_id"), column("warc_id"), column("path"), column("sha1"),
               column("bytes"), column("date_created"))


@dataclass(frozen=True, kw_only=True)
class SiteCounts:
    """What an SFM site holds, as its database says."""

    collection_sets: int
    collections: int
    active_collections: int
    seeds: int
    active_seeds: int
    credentials: int
    harvests: int
    warcs: int
    warc_bytes: int
    collections_by_type: dict[str, int] = field(default_factory=dict)

    def not_harvestable(self, known_types: set[str]) -> dict[str, int]:
        """Collections by type swath will not harvest (retired APIs, types it does not have); they still export."""
        gone = retired.retired_types()
        return {t: n for t, n in self.collections_by_type.items() if t in gone or t not in known_types}

    def as_dict(self, known_types: set[str]) -> dict[str, Any]:
        return {**vars(self), "not_harvestable": self.not_harvestable(known_types)}


@dataclass(frozen=True, kw_only=True)
class SfmSeed:
    seed_id: str
    token: str
    uid: str
    is_active: bool


@dataclass(frozen=True, kw_only=True)
class SfmWarc:
    warc_id: str
    path: str
    sha1: str
    bytes: int
    date_created: dt.datetime


@dataclass(frozen=True, kw_only=True)
class SfmHarvest:
    harvest_id: str
    harvest_type: str
    status: str
    date_requested: dt.datetime
    date_started: dt.datetime | None
    date_ended: dt.datetime | None
    warcs_count: int
    warcs_bytes: int
    stats: dict[str, dict[str, int]] = field(default_factory=dict)  # by day, items counted (sfm-ui's HarvestStat)
    warcs: list[SfmWarc] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SfmCollection:
    collection_id: str
    name: str
    harvest_type: str
    is_on: bool
    is_active: bool
    schedule_minutes: int | None
    harvest_options: str
    end_date: dt.datetime | None
    credential_token: str = field(repr=False)  # JSON of the credential's values: never print it
    seeds: list[SfmSeed] = field(default_factory=list)
    harvests: list[SfmHarvest] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class SfmCollectionSet:
    collection_set_id: str
    name: str
    description: str
    group: str
    collections: list[SfmCollection] = field(default_factory=list)


@contextmanager
def _reading(url: str) -> Iterator[Connection]:
    """One read-only transaction on the SFM database; SwathError with a code when it cannot be read."""
    engine = None
    try:
        engine = create_engine(installed_driver(make_url(url)), hide_parameters=True)
        with engine.connect().execution_options(postgresql_readonly=True) as conn, conn.begin():
            yield conn
    except ArgumentError:  # not a URL at all; never quoted, it may hold a password
        raise SwathError("--db-url is not a database URL: give postgresql+psycopg2://USER@HOST/DATABASE (sfm-ui's)",
                         code=codes.BAD_REQUEST) from None
    except ProgrammingError as exc:  # e.g. relation "ui_collection" does not exist
        _, line = classify(exc)
        raise SwathError(f"this database does not have sfm-ui's tables ({line}); point --db-url at sfm-ui's "
                         "database", code=codes.SFM_SCHEMA_MISSING) from None
    except SQLAlchemyError as exc:
        code, line = classify(exc)
        raise SwathError(f"the SFM database could not be read: {line.replace('SWATH_DB_URL', '--db-url')}",
                         code=code) from None
    except StoreError as exc:  # no driver installed for the URL
        raise SwathError(exc.message.replace("SWATH_DB_URL", "--db-url"), code=exc.code) from None
    finally:
        if engine is not None:
            engine.dispose()


def read_counts(url: str) -> SiteCounts:
    """The counts of the SFM database at `url`, in one read-only transaction; SwathError when it cannot be read."""
    with _reading(url) as conn:
        def one(query: Any) -> int:
            return int(conn.execute(query).scalar_one() or 0)

        by_type = conn.execute(select(_COLLECTIONS.c.harvest_type, func.count())
                               .group_by(_COLLECTIONS.c.harvest_type)).all()
        return SiteCounts(
            collection_sets=one(select(func.count()).select_from(_COLLECTION_SETS)),
            collections=one(select(func.count()).select_from(_COLLECTIONS)),
            active_collections=one(select(func.count()).select_from(_COLLECTIONS).where(_COLLECTIONS.c.is_active)),
            seeds=one(select(func.count()).select_from(_SEEDS)),
            active_seeds=one(select(func.count()).select_from(_SEEDS).where(_SEEDS.c.is_active)),
            credentials=one(select(func.count()).select_from(_CREDENTIALS)),
            harvests=one(select(func.count()).select_from(_HARVESTS)),
            warcs=one(select(func.count()).select_from(_WARCS)),
            warc_bytes=one(select(func.coalesce(func.sum(_WARCS.c.bytes), 0))),
            collections_by_type={str(t): int(n) for t, n in sorted(by_type)},
        )


def read_site(url: str) -> list[SfmCollectionSet]:
    """Every collection set with its collections, seeds, harvests and WARCs, in one read-only transaction."""
    with _reading(url) as conn:
        warcs: dict[int, list[SfmWarc]] = {}
        for row in conn.execute(select(_WARCS).order_by(_WARCS.c.id)).mappings():
            warcs.setdefault(row["harvest_id"], []).append(SfmWarc(
                warc_id=row["warc_id"], path=row["path"], sha1=row["sha1"].lower(), bytes=int(row["bytes"]),
                date_created=row["date_created"]))
        stats: dict[int, dict[str, dict[str, int]]] = {}
        for row in conn.execute(select(_STATS)).mappings():
            day = stats.setdefault(row["harvest_id"], {}).setdefault(row["harvest_date"].isoformat(), {})
            day[row["item"]] = int(row["count"])
        harvests: dict[int, list[SfmHarvest]] = {}
        for row in conn.execute(select(_HARVESTS).order_by(_HARVESTS.c.id)).mappings():
            harvests.setdefault(row["collection_id"], []).append(SfmHarvest(
                harvest_id=row["harvest_id"], harvest_type=row["harvest_type"], status=row["status"],
                date_requested=row["date_requested"], date_started=row["date_started"],
                date_ended=row["date_ended"], warcs_count=int(row["warcs_count"] or 0),
                warcs_bytes=int(row["warcs_bytes"] or 0), stats=stats.get(row["id"], {}),
                warcs=warcs.get(row["id"], [])))
        seeds: dict[int, list[SfmSeed]] = {}
        for row in conn.execute(select(_SEEDS).order_by(_SEEDS.c.id)).mappings():
            seeds.setdefault(row["collection_id"], []).append(SfmSeed(
                seed_id=row["seed_id"], token=row["token"] or "", uid=row["uid"] or "",
                is_active=bool(row["is_active"])))
        credentials = {row.id: row.token or "" for row in conn.execute(select(_CREDENTIALS))}
        collections: dict[int, list[SfmCollection]] = {}
        for row in conn.execute(select(_COLLECTIONS).order_by(_COLLECTIONS.c.id)).mappings():
            collections.setdefault(row["collection_set_id"], []).append(SfmCollection(
                collection_id=row["collection_id"], name=row["name"], harvest_type=row["harvest_type"],
                is_on=bool(row["is_on"]), is_active=bool(row["is_active"]),
                schedule_minutes=row["schedule_minutes"], harvest_options=row["harvest_options"] or "",
                end_date=row["end_date"], credential_token=credentials.get(row["credential_id"], ""),
                seeds=seeds.get(row["id"], []), harvests=harvests.get(row["id"], [])))
        groups = {row.id: row.name for row in conn.execute(select(_GROUPS))}
        return [SfmCollectionSet(collection_set_id=row["collection_set_id"], name=row["name"],
                                 description=row["description"] or "", group=groups.get(row["group_id"], "sfm"),
                                 collections=collections.get(row["id"], []))
                for row in conn.execute(select(_COLLECTION_SETS).order_by(_COLLECTION_SETS.c.id)).mappings()]
