"""A runner process for tests/test_pg_claims.py: its own PgClaim (own connection) on one harvest id, driven by
commands on stdin, one answer line each on stdout.

    python -m tests.pg_claim_child DB_URL HARVEST_ID DATA_ROOT
    try           -> "acquired TOKEN" | "busy"
    wait          -> "acquired TOKEN" once the claim is free
    check         -> "ok" | "lost CODE" (CODE: claim_fenced, or claim_lost when the connection or lock is gone)
    commit K JSON -> "committed" | "refused CODE": the collection's state key K set to JSON, under this claim
    get K         -> the JSON of K as this runner's state sees it (read at its start, plus its commits)
"""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.harvesters.claims import ClaimLost
from swath.store.harvest_state import PgCoordination


def main(url: str, harvest_id: str, data_root: str) -> None:
    config = Config(db_url=url, data_root=Path(data_root), storage_url="s3://bucket/prefix")
    coordination = PgCoordination(config=config)
    claim = coordination.claim(harvest_id, instance=f"child-{os.getpid()}")
    state = None

    def say(line: str) -> None:
        print(line, flush=True)

    for line in sys.stdin:
        command, *args = line.split(maxsplit=2)
        if command in ("try", "wait"):
            got = claim.try_acquire() if command == "try" else claim.acquire(give_up=threading.Event())
            if got:
                state = coordination.state(directory=config.data_root / "coll", claim=claim)
            say(f"acquired {claim.token}" if got else "busy")
        elif command == "check":
            try:
                claim.check()
                say("ok")
            except ClaimLost as exc:
                say(f"lost {getattr(exc, 'code', 'claim_lost')}")
        elif command == "commit":
            assert state is not None
            try:
                state.commit({args[0]: json.loads(args[1])})
                say("committed")
            except SwathError as exc:
                say(f"refused {exc.code}")
        elif command == "get":
            assert state is not None
            say(json.dumps(state.get(args[0])))


if __name__ == "__main__":
    main(*sys.argv[1:4])
