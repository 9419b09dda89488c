"""The claims race (tests/reliability/test_claims.py, test_pg_claims.py): replicas of one worker handed each start
twice at once, so that one runs it and the other finds it claimed. No tests here."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from swath.core.config import Config
from swath.messages.broker import Publisher
from tests.reliability.kit import Collector, WorkerProcess

WAIT_LINE = "is running in pid"  # what a replica logs when it leaves a harvest to the claim's holder


@dataclass(frozen=True)
class Race:
    finals: dict[str, list[dict[str, Any]]]  # the final statuses by harvest id
    warcs: list[dict[str, Any]]  # every warc_created
    exits: list[int | None]  # each replica's exit code
    waits: int  # how often a replica left a harvest to the claim's holder (WAIT_LINE in its log)


def race(config: Config, replicas: list[WorkerProcess], starts: Iterable[tuple[str, dict[str, Any]]]) -> Race:
    """Start the replicas; publish each start twice at once, so that each idle replica takes a copy, and wait for its
    final status and every replica's having taken a copy before the next; stop the replicas."""
    for replica in replicas:
        replica.start()
    try:
        with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                Publisher(config=config) as publisher:
            assert got.wait(lambda: all(r.ready() for r in replicas), 120), "replicas attached to the queue"
            for key, body in starts:
                for _ in range(2):
                    publisher.publish(key, body).result(120)
                harvest_id = body["id"]
                assert got.wait(lambda hid=harvest_id: hid in got.finals(), 180), f"final status of {harvest_id}"
                assert got.wait(lambda hid=harvest_id: all(hid in r.log_text() for r in replicas), 120), \
                    f"every replica took a copy of {harvest_id}"
            got.drained()
            finals, warcs = got.finals(), got.warcs()
    finally:
        exits = [replica.stop() for replica in replicas]
    return Race(finals=finals, warcs=warcs, exits=exits,
                waits=sum(replica.log_text().count(WAIT_LINE) for replica in replicas))
