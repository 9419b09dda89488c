"""`swath monitor`: record harvest.status, export.status and warc_created messages in the store.

It runs on the lead's worker runtime (messages/worker.py) as one more ServiceSpec whose job records a
message: acks after the write committed, dead-letters what does not validate (with the reason in headers),
reconnects and stops on SIGTERM like every worker. It consumes exactly `config.status_queue`, the durable
queue every worker declares, so statuses published while the monitor was down wait there. Recording is
idempotent (upserts keyed by harvest, WARC and export id; statuses never go back), so redelivery is harmless.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from pathlib import Path
from typing import cast

import orjson
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from swath import notify
from swath.core.config import Config
from swath.core.jobs import JobContext, JobInterrupted
from swath.core.jsontypes import JSONObject
from swath.core.objects import ObjectStore
from swath.core.weburl import DEFAULT_WEB_URL
from swath.messages import codes, routing
from swath.messages.bodies import HarvestStatusBody, StatusBody
from swath.messages.broker import STATUS_BINDINGS
from swath.messages.model import WarcCreated
from swath.messages.validation import InvalidMessage, validate
from swath.messages.worker import ServiceSpec, Worker
from swath.notify import Mail, Mailer
from swath.replicas import note_replica, replica_for_monitor
from swath.store import Store, monitor_repo, notify_repo, warc_index
from swath.store.models import Export, Job

log = logging.getLogger(__name__)
SERVICE = "swath Monitor"
DB_RETRY_SECONDS = 2.0


def record(store: Store, routing_key: str, body: object, *, data_root: Path | None = None,
           mailer: Mailer | None = None, replica: Replica | None = None) -> str:
    """Record one message; returns its kind. Raises InvalidMessage for anything that is not one of ours.
    `data_root`: where the WARCs' paths are kept from, so the WARC index survives moving the root.
    `mailer`: sends the notification e-mails a final status calls for (swath/notify.py).
    `replica`: with object storage and a replica, a new WARC's copy there is asked for and recorded
    (swath/replicas.py)."""
    try:
        kind = routing.parse(routing_key).kind
    except routing.BadRoutingKey as exc:
        raise InvalidMessage(str(exc), code=codes.UNKNOWN_ROUTING_KEY) from None
    if kind in ("harvest_status", "export_status"):
        validate(kind, body)
        with store.session() as s:
            mails = record_status(s, kind, cast(StatusBody, body), routing_key=routing_key,
                                  web_url=mailer.web_url if mailer is not None else DEFAULT_WEB_URL)
        if mailer is not None:
            mailer.send(mails)  # after the commit: a status that fails to record mails nobody
    elif kind == routing.WARC_CREATED:
        warc = WarcCreated.from_dict(body)
        with store.session() as s:
            record_warc_created(s, warc, data_root=data_root)
            if replica is not None:
                note_replica(s, replica.config, replica.store, warc_id=warc.warc_id, path=warc.path, size=warc.bytes,
                             sha1=warc.sha1)
    else:
        raise InvalidMessage(f"the monitor does not record {routing_key} messages", code=codes.UNKNOWN_ROUTING_KEY)
    return kind


def record_status(s: Session, kind: str, body: StatusBody, *, routing_key: str,
                  web_url: str = DEFAULT_WEB_URL) -> list[Mail]:
    """A harvest or export status: its row, its process's heartbeat, and the mails its transition calls for
    (their links at `web_url`, SWATH_WEB_URL)."""
    before = notify.status_before(s, kind, body["id"])
    if kind == "harvest_status":
        harvest = cast(HarvestStatusBody, body)
        row: Job | Export = monitor_repo.record_harvest_status(s, harvest, routing_key=routing_key)
    else:
        row = monitor_repo.record_export_status(s, body, routing_key=routing_key)
    notify_repo.report_seen(s, role="harvester" if kind == "harvest_status" else "exporter", body=body)
    return notify.mails_for(s, kind, row, before, web_url=web_url)


def record_warc_created(s: Session, warc: WarcCreated, *, data_root: Path | None) -> None:
    """The WARC and its entry in the WARC index exports select by (store/warc_index.py)."""
    row = monitor_repo.record_warc(s, warc_id=warc.warc_id, path=warc.path, sha1=warc.sha1, size=warc.bytes,
                           date_created=warc.date_created, collection_set_id=warc.collection_set_id,
                           collection_id=warc.collection_id, harvest_id=warc.harvest_id,
                           harvest_type=warc.harvest_type)
    warc_index.record_details(s, row, warc, data_root=data_root)


@dataclasses.dataclass(frozen=True)
class Replica:
    """The replica store the monitor checks new WARCs in, and the settings naming the primary."""

    config: Config
    store: ObjectStore


@dataclasses.dataclass(kw_only=True)
class RecordJob:
    """The worker job: record the message, count it in the store if it is refused."""

    store: Store
    data_root: Path | None = None
    mailer: Mailer | None = None
    replica: Replica | None = None

    def __call__(self, body: JSONObject, *, routing_key: str, ctx: JobContext) -> None:
        try:
            record(self.store, routing_key, body, data_root=self.data_root, mailer=self.mailer, replica=self.replica)
        except InvalidMessage as exc:
            digest = hashlib.sha1(routing_key.encode() + b"\0" + orjson.dumps(body, option=orjson.OPT_SORT_KEYS))
            with self.store.session() as s:
                monitor_repo.record_rejected(s, digest=digest.hexdigest(), routing_key=routing_key, code=exc.code,
                                     message=str(exc))
            raise  # the runtime dead-letters it with the reason
        except DBAPIError as exc:
            # the database is away: not the message's fault, so it goes back to the queue after a pause
            log.warning("store unavailable (%s); message on %s goes back to the queue", type(exc).__name__,
                        routing_key)
            ctx.stop.wait(DB_RETRY_SECONDS)
            raise JobInterrupted() from None


def monitor_spec(*, config: Config, store: Store) -> ServiceSpec:
    if not config.status_queue:
        raise ValueError("SWATH_STATUS_QUEUE is empty: the monitor needs the status queue to consume")
    return ServiceSpec(name=config.status_queue, service=SERVICE, bindings=list(STATUS_BINDINGS),
                       job=RecordJob(store=store, data_root=config.harvest_base, mailer=Mailer(config),
                                     replica=_replica(config)),
                       accepts=lambda body: None, concurrency=1)


def _replica(config: Config) -> Replica | None:
    replica = replica_for_monitor(config)
    return None if replica is None else Replica(config=config, store=replica)


def monitor_worker(*, config: Config, store: Store) -> Worker:
    # The runtime names its queue prefix + spec.name; the status queue name is already complete.
    return Worker(config=dataclasses.replace(config, queue_prefix=""), spec=monitor_spec(config=config, store=store))
