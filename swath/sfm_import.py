"""An SFM site's database, read-only (sfm-ui's Django models: tables `ui_collectionset`, `ui_collection`,
`ui_seed`, `ui_credential`, `ui_harvest`, `ui_warc`), for `swath sfm import`. For now what `--dry-run` reports:
how much there is to bring over, and which collections swath cannot harvest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import column, create_engine, func, select, table
from sqlalchemy.exc import ProgrammingError, SQLAlchemyError

from swath.core.errors import SwathError
from swath.messages import codes, retired
from swath.store.dberrors import classify

_COLLECTION_SETS = table("ui_collectionset", column("id"))
_COLLECTIONS = table("ui_collection", column("id"), column("harvest_type"), column("is_active"))
_SEEDS = table("ui_seed", column("id"), column("is_active"))
_CREDENTIALS = table("ui_credential", column("id"))
_HARVESTS = table("ui_harvest", column("id"))
_WARCS = table("ui_warc", column("id"), column("bytes"))


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
        return {t: n for t, n in self.collections_by_type.items() if t in retired.RETIRED or t not in known_types}

    def as_dict(self, known_types: set[str]) -> dict[str, Any]:
        return {**vars(self), "not_harvestable": self.not_harvestable(known_types)}


def read_counts(url: str) -> SiteCounts:
    """The counts of the SFM database at `url`, in one read-only transaction; SwathError when it cannot be read."""
    engine = create_engine(url)
    try:
        with engine.connect().execution_options(postgresql_readonly=True) as conn, conn.begin():
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
    except ProgrammingError as exc:  # e.g. relation "ui_collection" does not exist
        _, line = classify(exc)
        raise SwathError(f"this database does not have sfm-ui's tables ({line}); point --db-url at sfm-ui's "
                         "database", code=codes.SFM_SCHEMA_MISSING) from None
    except SQLAlchemyError as exc:
        code, line = classify(exc)
        raise SwathError(f"the SFM database could not be read: {line.replace('SWATH_DB_URL', '--db-url')}",
                         code=code) from None
    finally:
        engine.dispose()
