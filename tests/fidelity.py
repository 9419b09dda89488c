"""The fidelity property (issue 29 item 6) for any platform with a fake on 127.0.0.1:

(a) every response body in the WARCs is byte for byte what the fake sent for it, bar the bytes of the secrets
    the harvest was given or learnt (those become as many `*`);
(b) every item the fake served is exported exactly once, and none it listed before the (last) harvest began is
    missing, across WARC rotations, a shutdown mid-harvest followed by the redelivered start (the resume), and two
    incremental harvests in a row while the fake keeps publishing.

A `Case` says per platform how to make its fake, what to harvest and how to read item ids out of one served
answer; tests/test_fidelity.py runs every case. The streams have their own harness on the same checks
(tests/fidelity_streams.py: forced reconnects, a connection's WARC segments joined)."""

from __future__ import annotations

import csv
import dataclasses
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from swath.core.config import Config
from swath.core.jobs import JobContext, JobInterrupted
from swath.exporters.base import run_export
from swath.exporters.registry import start_routing_key
from swath.harvesters import registry
from swath.harvesters.run import run_harvest
from swath.messages.routing import key
from tests.enginekit import context, warc_files
from tests.fakes.httpserver import FakeServer, Request, Response

MODES = ("rotated", "resumed", "incremental")


@dataclass(frozen=True)
class Case:
    name: str
    harvest_type: str
    make: Callable[[Path, Path], Any]  # the shared fixtures and a scratch folder -> the fake (see `server_of`)
    seeds: Callable[[Any], list[dict]]  # the fake -> the start's seeds (a backend's name the fake's URL)
    item_ids: Callable[[Request], list[str]]  # the ids of the items in one served answer (none: not a listing)
    listed: Callable[[Any], set[str]]  # the ids the fake lists right now
    api: str | None = None  # the platform whose API root moves to the fake
    credentials: dict[str, str] = field(default_factory=dict)  # the secrets: their bytes may be masked
    logins: dict[str, str] = field(default_factory=dict)  # credentials that only name the account: public data
    learnt: Callable[[Any], list[str]] = lambda fake: []  # secrets handed out during the harvest (session tokens)
    unrecorded: tuple[str, ...] = ()  # paths answered off the record by design (logins): not in the WARC
    publish: Callable[[Any], object] | None = None  # adds one item, newest of all, while the harvest pages
    options: dict[str, Any] = field(default_factory=dict)
    id_column: str = "id"
    interrupt_after: int = 2  # listing answers served before the shutdown of the interrupted run
    marks: tuple[Any, ...] = ()  # e.g. an xfail naming a known bug
    modes: tuple[str, ...] = MODES  # incremental: the type has the option

    def secrets(self, fake: Any) -> list[str]:
        return [*self.credentials.values(), *self.learnt(fake)]


@dataclass
class Run:
    """What a harvest (one or two runs of the same start) served, recorded and exported."""

    served: list[Request]  # answers on recorded paths, in arrival order
    stored: list[bytes]  # response payloads of every WARC in the collection, as stored
    warcs: int
    listed: set[str]  # the ids the fake listed when the last harvest began: none may be missing
    exported: list[str]  # the id column of every exported row
    final: dict[str, Any]


def server_of(fake: Any) -> FakeServer:
    """The FakeServer of a fake: itself, or its `server` (the platform fakes and the portals)."""
    return fake if isinstance(fake, FakeServer) else fake.server


def start(case: Case, fake: Any) -> dict[str, Any]:
    return {"id": f"fidelity:{uuid.uuid4().hex[:8]}", "type": case.harvest_type, "path": "collections/cs-fid/c-fid",
            "seeds": case.seeds(fake), "options": dict(case.options), "credentials": case.logins | case.credentials,
            "collection_set": {"id": "cs-fid"}, "collection": {"id": "c-fid"}}


def harvest(config: Config, case: Case, fake: Any, *, mode: str, pause: float) -> Run:
    """Harvest, then a deduplicated CSV export of the collection. `rotated`: one run of the start. `resumed`: one
    shut down after `interrupt_after` listing answers, then the same start again, as the broker redelivers it.
    `incremental`: two incremental harvests one after the other (the second a new harvest id), while the fake
    keeps publishing. Every listing answer waits `pause` first (see `pace_listings`)."""
    body = start(case, fake)
    if mode == "incremental":
        body["options"]["incremental"] = True
    routing_key = key("harvest_start", registry.lookup(case.harvest_type).platform, case.harvest_type)
    ctx, published = context(config)
    first, tripped = ctx, threading.Event()

    def after(listed: int) -> None:
        if mode == "resumed" and listed == case.interrupt_after:  # as on SIGTERM, while that answer goes out
            first.shutdown.set()
            first.stop.set()
            tripped.set()

    pace_listings(server_of(fake), case, pause=pause, after=after)
    listed = case.listed(fake)
    if mode == "resumed":
        with pytest.raises(JobInterrupted):
            run_harvest(body, routing_key=routing_key, ctx=ctx)
        assert tripped.is_set(), "the harvest ended before the fake asked for the shutdown"
        assert all(s["status"] == "running" for s in published.statuses)  # no final status yet
        ctx, published = context(config)
    run_harvest(body, routing_key=routing_key, ctx=ctx)
    if mode == "incremental":
        assert published.statuses[-1]["status"] == "completed success", published.statuses[-1]["errors"]
        listed = case.listed(fake)  # what the second harvest must get to, with what the first left
        ctx, published = context(config)
        run_harvest({**body, "id": body["id"] + "-next"}, routing_key=routing_key, ctx=ctx)
    files = warc_files(config.data_root / "collections")
    served = [r for r in server_of(fake).served(status=None) if r.path not in case.unrecorded]
    return Run(served=served, stored=stored_payloads(files), warcs=len(files), listed=listed,
               exported=export_ids(config, case), final=published.statuses[-1])


def pace_listings(server: FakeServer, case: Case, *, pause: float, after: Callable[[int], None]) -> None:
    """Wrap the fake's routes: each listing answer (one with items) waits `pause` before it goes out, as a
    server's own pace: the harvest's control loop sees every page (so WARCs rotate on the way) and a publishing
    fake adds items between pages. `after(n)` is called once the n-th listing answer is made."""
    lock, count = threading.Lock(), [0]

    def wrap(route: Callable[[Request], Response]) -> Callable[[Request], Response]:
        def routed(req: Request) -> Response:
            resp = route(req)
            if resp.status == 200 and isinstance(resp.body, bytes) and \
                    case.item_ids(dataclasses.replace(req, sent=resp.body)):
                time.sleep(pause)
                with lock:
                    count[0] += 1
                    listed = count[0]
                after(listed)
            return resp

        return routed

    server.routes = {path: wrap(route) for path, route in server.routes.items()}


def stored_payloads(files: list[Path]) -> list[bytes]:
    out = []
    for path in files:
        with open(path, "rb") as fh:
            out += [rec.raw_stream.read() for rec in ArchiveIterator(fh) if rec.rec_type == "response"]
    return out


def export_ids(config: Config, case: Case) -> list[str]:
    """A deduplicated CSV export of the collection, as a researcher asks for it; the id of every row."""
    export_id = f"fid-{uuid.uuid4().hex[:6]}"
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda _key, body: statuses.append(body), service="test")
    body = {"id": export_id, "type": case.harvest_type, "collection": {"id": "c-fid"},
            "path": f"exports/{export_id}", "format": "csv", "dedupe": True, "segment_size": None}
    run_export(body, routing_key=start_routing_key(case.harvest_type), ctx=ctx)
    assert statuses[-1]["status"] == "completed success", statuses[-1]
    ids = []
    for path in sorted((config.data_root / "exports" / export_id).glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            ids += [row[case.id_column] for row in csv.DictReader(fh)]
    return ids


def masked(body: bytes, secrets: list[str]) -> bytes:
    """The body with each secret's bytes as many `*`: the one change redaction may make to a recorded body."""
    for secret in secrets:
        body = body.replace(secret.encode(), b"*" * len(secret.encode()))
    return body


def check_bodies(run: Run, secrets: list[str], *, complete: bool) -> int:
    """(a): every stored body is one the fake sent (secrets masked); `complete`: and every one sent is stored.
    Returns the number of bodies compared."""
    assert run.stored, "no response in the WARCs"
    sent = Counter(masked(r.sent or b"", secrets) for r in run.served)
    stored = Counter(run.stored)
    foreign = stored - sent
    assert not foreign, f"{sum(foreign.values())} WARC bodies differ from every body the fake sent, e.g. " \
                        f"{next(iter(foreign))[:200]!r}"
    if complete:
        missing = sent - stored
        assert not missing, f"{sum(missing.values())} bodies sent are not in the WARCs, e.g. " \
                            f"{next(iter(missing))[:200]!r}"
    for secret in secrets:
        assert not any(secret.encode() in body for body in run.stored), "a secret is in a WARC body"
    return sum(stored.values())


def check_items(run: Run, case: Case) -> int:
    """(b): each item served exported exactly once, nothing else exported, none listed at the start missing.
    Returns the number of items checked."""
    served = {i for r in run.served if r.status == 200 for i in case.item_ids(r)}
    twice = [i for i, n in Counter(run.exported).items() if n > 1]
    assert not twice, f"exported more than once: {twice[:5]}"
    exported = set(run.exported)
    assert exported - served == set(), f"exported but never served: {sorted(exported - served)[:5]}"
    assert served - exported == set(), f"served but not exported: {sorted(served - exported)[:5]}"
    missed = run.listed - exported
    assert not missed, f"listed before the harvest began, never exported: {sorted(missed)[:5]}"
    return len(served)
