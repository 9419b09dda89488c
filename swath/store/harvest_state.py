"""A collection's harvest state (since ids, cursors, the resume journal) in the store, for sites whose WARCs go to
object storage and whose workers share no data root; and `PgCoordination`, which hands a harvest run its claim
(swath/store/pg_claim.py), this state and the harvest's final-status record, kept in it
(harvesters/coordination.py `Coordination`).

Each key is a row of `harvest_state` under the collection's scope (its folder relative to the harvest root,
the same on every host). A commit writes its keys in one transaction that first runs `fence_check` for the
committing runner's token, so a stale runner's late commit changes nothing (`claim_fenced`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from sqlalchemy import Engine, delete, select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError

from swath.core.config import Config
from swath.core.jsontypes import JSONObject
from swath.harvesters.claims import Claim, ClaimFenced
from swath.harvesters.outcome import Outcome, OutcomeRecord
from swath.harvesters.state import CollectionState, StagedState
from swath.store.db import Store, StoreError
from swath.store.lease_models import HarvestOutcomeRow, HarvestStateRow
from swath.store.models import utcnow
from swath.store.pg_claim import ClaimStoreUnavailable, PgClaim, fence_check, unavailable


class StoreState(StagedState):
    """The state of one collection (`scope`) in the store; commits fenced by `claim`'s token."""

    def __init__(self, *, engine: Engine, scope: str, claim: PgClaim) -> None:
        self.engine = engine
        self.scope = scope
        self.claim = claim
        super().__init__()

    def _rows(self, conn: Any) -> dict[str, Any]:
        rows = conn.execute(select(HarvestStateRow.key, HarvestStateRow.value)
                            .where(HarvestStateRow.scope == self.scope))
        return {key: json.loads(value) for key, value in rows}

    def _load(self) -> JSONObject:
        try:
            with self.engine.connect() as conn:
                return self._rows(conn)
        except SQLAlchemyError as exc:
            raise unavailable(exc, f"cannot read the state of {self.scope}") from None

    def _apply(self, updates: JSONObject) -> JSONObject:
        token = self.claim.token
        if token is None:
            raise ClaimFenced(f"harvest {self.claim.harvest_id}: state committed without its claim")
        try:
            with self.engine.begin() as conn:
                fence_check(self.claim.harvest_id, token, connection=conn)
                gone = [key for key, value in updates.items() if value is None]
                if gone:
                    conn.execute(delete(HarvestStateRow).where(HarvestStateRow.scope == self.scope,
                                                               HarvestStateRow.key.in_(gone)))
                kept = [{"scope": self.scope, "key": key, "value": json.dumps(value, sort_keys=True),
                         "updated_at": utcnow()} for key, value in updates.items() if value is not None]
                if kept:
                    upsert = insert(HarvestStateRow).values(kept)
                    conn.execute(upsert.on_conflict_do_update(
                        index_elements=["scope", "key"],
                        set_={"value": upsert.excluded.value, "updated_at": upsert.excluded.updated_at}))
                return self._rows(conn)  # other harvests' keys of the collection, as committed
        except SQLAlchemyError as exc:
            raise unavailable(exc, f"cannot commit the state of {self.scope}") from None


class StoreOutcome:
    """A harvest's final-status record in `harvest_outcomes` (harvesters/outcome.py `Outcome`), so a start
    delivered again to another host is acked as finished; written under the fence like a state commit."""

    def __init__(self, *, engine: Engine, claim: PgClaim) -> None:
        self.engine = engine
        self.claim = claim

    def read(self) -> OutcomeRecord | None:
        try:
            with self.engine.connect() as conn:
                raw = conn.execute(select(HarvestOutcomeRow.record)
                                   .where(HarvestOutcomeRow.harvest_id == self.claim.harvest_id)).scalar()
        except SQLAlchemyError as exc:
            raise unavailable(exc, f"cannot read the final status of harvest {self.claim.harvest_id}") from None
        return None if raw is None else cast(OutcomeRecord, json.loads(raw))

    def write(self, status: Mapping[str, object], *, published: bool) -> None:
        harvest_id, token = self.claim.harvest_id, self.claim.token
        if token is None:
            raise ClaimFenced(f"harvest {harvest_id}: final status written without its claim")
        row = {"harvest_id": harvest_id, "record": json.dumps({"status": status, "published": published}),
               "updated_at": utcnow()}
        try:
            with self.engine.begin() as conn:
                fence_check(harvest_id, token, connection=conn)
                upsert = insert(HarvestOutcomeRow).values(row)
                conn.execute(upsert.on_conflict_do_update(
                    index_elements=["harvest_id"],
                    set_={"record": upsert.excluded.record, "updated_at": upsert.excluded.updated_at}))
        except SQLAlchemyError as exc:
            raise unavailable(exc, f"cannot keep the final status of harvest {harvest_id}") from None


class PgCoordination:
    """Claims and state in the PostgreSQL store (harvesters/coordination.py `Coordination`). One per process
    and store URL: its engine (a pool) serves state reads, commits and `fence_check`; each claim opens its own
    connection."""

    def __init__(self, *, config: Config) -> None:
        self.config = config
        self._store: Store | None = None
        self._lock = threading.Lock()

    @property
    def engine(self) -> Engine:
        """The store's engine, opened (and migrated: harvest_claims, harvest_state) on first use."""
        with self._lock:
            if self._store is None:
                if make_url(self.config.db_url).get_backend_name() != "postgresql":
                    raise ClaimStoreUnavailable(
                        "SWATH_STORAGE_URL puts WARCs in object storage, so harvest claims and state are kept in "
                        "PostgreSQL: set SWATH_DB_URL to a postgresql:// URL every worker reaches")
                try:
                    self._store = Store(url=self.config.db_url)
                except StoreError as exc:
                    raise ClaimStoreUnavailable(f"the store for claims and state: {exc}") from None
            return self._store.engine

    def claim(self, harvest_id: str, *, instance: str) -> PgClaim:
        self.engine  # noqa: B018 - a store that cannot be opened refuses the start here, with its code
        return PgClaim(url=self.config.db_url, harvest_id=harvest_id, host=self.config.host, instance=instance)

    def state(self, *, directory: Path, claim: Claim) -> CollectionState:
        assert isinstance(claim, PgClaim)  # a claim this coordination made
        return StoreState(engine=self.engine, scope=self.scope(directory), claim=claim)

    def outcome(self, *, directory: Path, claim: Claim) -> Outcome:
        assert isinstance(claim, PgClaim)  # a claim this coordination made
        return StoreOutcome(engine=self.engine, claim=claim)

    def scope(self, directory: Path) -> str:
        """The collection's folder relative to the harvest root: the same on every host."""
        try:
            return directory.relative_to(self.config.harvest_base).as_posix()
        except ValueError:
            return directory.as_posix()

    def fence_check(self, harvest_id: str, token: int) -> None:
        """For a write outside the store (an upload to object storage): raise ClaimFenced (`claim_fenced`)
        unless `token` is still the newest of `harvest_id`."""
        try:
            with self.engine.begin() as conn:
                fence_check(harvest_id, token, connection=conn)
        except SQLAlchemyError as exc:
            raise unavailable(exc, f"cannot check the claim of harvest {harvest_id}") from None

