"""Where a harvest's claim, its collection's state and its final-status record are kept: the data root's
files (`LocalFiles`, the default: flock claims, swath-state.json, .swath/harvests/), or, when WARCs go to
object storage and workers share no filesystem, the PostgreSQL store (swath/store/harvest_state.py
`PgCoordination`). The engine sits below the store, so the worker service hands that one in
(swath/harvest_job.py); harvesters/ never imports the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from swath.core.config import Config
from swath.harvesters.claims import Claim, HarvestClaim
from swath.harvesters.outcome import FinalOutcome, Outcome
from swath.harvesters.state import CollectionState, StateStore


class Coordination(Protocol):
    def claim(self, harvest_id: str, *, instance: str) -> Claim:
        """The claim of `harvest_id` for the worker `instance` (not yet taken)."""

    def state(self, *, directory: Path, claim: Claim) -> CollectionState:
        """The state of the collection in `directory`, committed under `claim` (taken)."""

    def outcome(self, *, directory: Path, claim: Claim) -> Outcome:
        """The final-status record of the claim's harvest (read without taking the claim; written under it)."""


@dataclass(frozen=True)
class LocalFiles:
    """Today's claims and state: files under the data root, which every worker shares."""

    data_root: Path

    def claim(self, harvest_id: str, *, instance: str) -> Claim:
        return HarvestClaim(data_root=self.data_root, harvest_id=harvest_id)

    def state(self, *, directory: Path, claim: Claim) -> CollectionState:
        return StateStore(directory=directory)

    def outcome(self, *, directory: Path, claim: Claim) -> Outcome:
        return FinalOutcome(directory=directory, harvest_id=claim.harvest_id)


def shared_filesystem(config: Config) -> bool:
    """False when SWATH_STORAGE_URL names object storage: then no flock or state file is shared by the workers."""
    return not (config.storage_url or "").startswith("s3://")
