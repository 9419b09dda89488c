"""A harvest's status: `harvest_status` builds one from its ledger and WARCs; `FinalOutcome` keeps the final
status of a finished harvest beside its WARCs (`.swath/harvests/<id>.json`).

A start delivered again (a worker died after finishing, before its ack; a requester repeating a start)
then neither harvests again nor loses the final status. The record is written before the final status
is published and marked published once the broker confirmed it, so a redelivery re-publishes only what
was not confirmed. A harvest that failed because of swath's own side (`local_fault`: a WARC could not
be written; `disk_full`, `data_root_unwritable`, `io_error`, `free_space_low`: the disk) is not final: the
next delivery of its start resumes it. Failures of the remote side or of the request are final.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol, TypedDict, cast

from swath.core.paths import read_no_follow, safe_id
from swath.core.storage import STORAGE_CODES
from swath.harvesters.ledger import LedgerView
from swath.harvesters.state import write_json_atomic
from swath.harvesters.warc import ClosedWarc
from swath.messages import codes
from swath.messages.bodies import StatusBody
from swath.messages.model import RUNNING, HarvestStatus, Note, Origin, now_iso


def harvest_status(*, harvest_id: str, status: str, origin: Origin, started: str, ledger: LedgerView,
                   warcs: Sequence[ClosedWarc]) -> HarvestStatus:
    """A `running` or final status: the notes, counts and ids so far; every WARC of the harvest."""
    infos = list(ledger.infos)
    if ledger.rate_limit_waits:  # one note for all the waits, not one per wait
        infos.append(Note(codes.RATE_LIMITED, f"rate limited {ledger.rate_limit_waits} time(s); "
                                              f"waited {ledger.rate_limit_seconds:.0f}s in all"))
    return HarvestStatus(
        id=harvest_id, status=status, origin=origin, date_started=started,
        date_ended=None if status == RUNNING else now_iso(),
        infos=infos, warnings=ledger.warnings, errors=ledger.errors, stats=ledger.stats,
        token_updates=ledger.token_updates, uids=ledger.uids,
        warcs_count=len(warcs), warcs_bytes=sum(w.bytes for w in warcs),
    )


class OutcomeRecord(TypedDict):
    status: StatusBody  # the final harvest_status, as published
    published: bool  # the broker confirmed it


class Outcome(Protocol):
    """Where a harvest's final-status record is kept: `FinalOutcome` (a file) or the store's state rows when the
    workers share no filesystem (swath/store/harvest_state.py `StoreOutcome`)."""

    def read(self) -> OutcomeRecord | None: ...
    def write(self, status: Mapping[str, object], *, published: bool) -> None: ...


class FinalOutcome:
    def __init__(self, *, directory: Path, harvest_id: str) -> None:
        self.path = directory / ".swath" / "harvests" / f"{safe_id(harvest_id)}.json"

    def read(self) -> OutcomeRecord | None:
        try:
            record = json.loads(read_no_follow(self.path))
        except FileNotFoundError:
            return None
        except (ValueError, RecursionError):  # not one swath wrote (a link, FIFO, garbage): as if none was recorded
            return None
        return cast(OutcomeRecord, record) if isinstance(record, dict) else None

    def write(self, status: Mapping[str, object], *, published: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, {"status": status, "published": published})


# swath's own side failed (its disk, its object store), not the remote's
RESUMABLE = frozenset({codes.LOCAL_FAULT, *STORAGE_CODES, codes.STORAGE_UNAVAILABLE, codes.STORAGE_REFUSED})


def is_final(record: OutcomeRecord) -> bool:
    """False for a harvest that ended on a local fault (a WARC not written, a full or failing disk, the
    free-space guard): delivered again, it resumes."""
    return not any(error.get("code") in RESUMABLE for error in record["status"].get("errors", []))
