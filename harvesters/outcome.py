"""The final status of a finished harvest, kept beside its WARCs (`.swath/harvests/<id>.json`).

A start delivered again (a worker died after finishing, before its ack; a requester repeating a start)
then neither harvests again nor loses the final status. The record is written before the final status
is published and marked published once the broker confirmed it, so a redelivery re-publishes only what
was not confirmed. A harvest that failed because of swath's own side (`local_fault`: a WARC could not
be written) is not final: the next delivery of its start resumes it. Failures of the remote side or of
the request are final.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from swath.core.paths import safe_id
from swath.harvesters.state import write_json_atomic
from swath.messages import codes


class FinalOutcome:
    def __init__(self, *, directory: Path, harvest_id: str) -> None:
        self.path = directory / ".swath" / "harvests" / f"{safe_id(harvest_id)}.json"

    def read(self) -> dict[str, Any] | None:
        try:
            return json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return None

    def write(self, status: dict[str, Any], *, published: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(self.path, {"status": status, "published": published})


def is_final(record: dict[str, Any]) -> bool:
    """False for a harvest that ended on a local fault: delivered again, it resumes."""
    return not any(error.get("code") == codes.LOCAL_FAULT for error in record["status"].get("errors", []))
