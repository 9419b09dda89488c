"""A small job for runtime tests: records its run in files, optionally waits for a release file."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from swath.core.config import Config
from swath.core.jobs import JobContext, JobInterrupted
from swath.messages import routing
from swath.messages.model import COMPLETED_SUCCESS, HarvestStart, HarvestStatus, Origin, now_iso
from swath.messages.worker import ServiceSpec, Worker


def dummy_job(body: dict[str, Any], *, routing_key: str, ctx: JobContext) -> None:
    start = HarvestStart.from_dict(body)
    root = ctx.config.data_root
    (root / f"started-{start.id}").touch()
    release = root / "release"
    while start.options.get("wait") and not release.exists():
        if ctx.shutdown.is_set():
            (root / f"interrupted-{start.id}").touch()
            raise JobInterrupted()
        time.sleep(0.05)
    with (root / "done.log").open("a") as fh:
        fh.write(start.id + "\n")
    status = HarvestStatus(id=start.id, status=COMPLETED_SUCCESS, origin=Origin(service=ctx.service, host="test"),
                           date_started=now_iso(), date_ended=now_iso(), stats={"2026-01-01": {"items": 1}})
    ctx.publish(routing.status_key_for(routing_key), status.to_dict())


def dummy_spec(**overrides: Any) -> ServiceSpec:
    fields: dict[str, Any] = dict(
        name="dummy_harvester",
        service="Dummy Harvester",
        bindings=["harvest.start.dummy.*"],
        stop_bindings=["harvest.stop.dummy.*"],
        job=dummy_job,
        accepts=lambda body: None if body.get("type") == "dummy" else f"unknown harvest type {body.get('type')!r}",
    )
    fields.update(overrides)
    return ServiceSpec(**fields)


if __name__ == "__main__":
    # python -m tests.dummyjob '<config as json>' : run a dummy worker in this process (for kill -9 tests)
    raw = json.loads(sys.argv[1])
    cfg = Config(**{**raw, "data_root": Path(raw["data_root"])})
    worker = Worker(config=cfg, spec=dummy_spec())
    worker.install_signal_handlers()
    worker.run()
