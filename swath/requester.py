"""The requester side of SFM messaging: harvest sources, launches (through an outbox), stops and exports.

Launching writes a launch record (a `jobs` row with no `published_at`) and commits it before publishing
`harvest.start`; the row is marked published once the broker confirmed the message. Credentials are stored
as references ("env:VAR" or "stored") and resolved only while building the message (swath/credential_refs.py);
stopping and cancelling a launched job: swath/job_stops.py.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.core.jsontypes import JSONObject
from swath.credential_refs import CREDENTIAL_NAME, ENV_PREFIX, STORED, check_credential_name, parse_credentials
from swath.credential_refs import resolve as resolve_credentials
from swath.harvesters.registry import lookup as lookup_harvest_type
from swath.job_stops import Cancelled, JobStops
from swath.messages import codes, routing
from swath.messages.broker import Publisher, PublishError, Unroutable
from swath.messages.broker_errors import BrokerError
from swath.messages.model import ExportStart, HarvestStart
from swath.messages.validation import InvalidMessage
from swath.request_error import RequestError
from swath.store import Store, repo
from swath.store.models import ACCEPTED, FAILURE, QUEUED, Export, Job, Source, utcnow
from swath.store.secrets import SecretBox

if TYPE_CHECKING:  # the broker's management side loads only when asked
    from swath.workqueue import QueueState

# what callers import from here, though it lives by its job in credential_refs, request_error and job_stops
__all__ = ["CREDENTIAL_NAME", "ENV_PREFIX", "STORED", "Cancelled", "PublishResult", "RequestError", "Requester",
           "check_credential_name", "collection_path", "parse_credentials"]
log = logging.getLogger(__name__)
CONFIRM_TIMEOUT = 30.0
BROKER_GIVE_UP = 5.0  # seconds a publish waits for an unreachable broker; a refused login fails at once


@dataclass(frozen=True)
class PublishResult:
    job_id: str
    published: bool
    error: str | None = None


def collection_path(source: Source) -> str:
    """The harvest `path`, relative to the data root (SFM's collections/<set>/<collection>)."""
    return f"collections/{source.collection_set_id}/{source.collection_id}"


@dataclass(kw_only=True)
class Requester:
    config: Config
    store: Store
    env: Mapping[str, str] = field(default_factory=dict)  # for env: credential references, given by main()
    publisher: Publisher | None = None
    box: SecretBox | None = None  # seals stored credential values; from config's key when not given

    def secret_box(self) -> SecretBox:
        """The key for stored values, read on first need (a source with env: references only needs none)."""
        if self.box is None:
            self.box = SecretBox.from_config(self.config)
        return self.box

    # ---- sources ----

    def create_source(self, *, name: str, harvest_type: str, seeds: Sequence[Mapping[str, object]],
                      options: Mapping[str, object], credentials: Iterable[str], collection_set_id: str,
                      collection_id: str | None, secrets: Mapping[str, str] | None = None) -> Source:
        """`credentials` are NAME=env:VAR / NAME=VALUE pairs; `secrets` are values read elsewhere (a prompt,
        a file); both kinds of value are sealed into the store, and refused when no key is configured."""
        try:
            platform = lookup_harvest_type(harvest_type).platform
        except LookupError as exc:
            raise RequestError(str(exc), code=getattr(exc, "code", None) or codes.UNKNOWN_TYPE) from None
        refs, stored = parse_credentials(credentials)
        for secret_name, value in (secrets or {}).items():
            if check_credential_name(secret_name) in refs:
                raise RequestError(f"credential {secret_name!r} is given twice", code=codes.BAD_REQUEST)
            refs[secret_name], stored[secret_name] = STORED, value
        box = self.secret_box() if stored else SecretBox()
        with self.store.session() as s:  # nothing is kept if the source would not make a valid message
            try:
                source = repo.create_source(s, name=name, harvest_type=harvest_type, platform=platform, seeds=seeds,
                                            options=options, credentials=refs, secrets=stored, box=box,
                                            collection_set_id=collection_set_id, collection_id=collection_id)
            except repo.Conflict as exc:
                raise RequestError(str(exc), code=codes.BAD_REQUEST) from None
            try:  # placeholders stand in for the credentials, which may live in the environment
                HarvestStart.from_dict(self._start_body(source, "check", {k: "x" for k in refs}))
            except InvalidMessage as exc:
                raise RequestError(f"source {name!r} would not make a valid harvest.start: {exc}",
                                   code=exc.code) from None
        return source

    def start_routing_key(self, source: Source) -> str:
        return routing.key("harvest_start", source.platform, source.harvest_type)

    def _start_body(self, source: Source, job_id: str, credentials: JSONObject) -> JSONObject:
        body: JSONObject = {
            "id": job_id, "type": source.harvest_type, "path": collection_path(source),
            "seeds": source.seeds, "options": source.options,
            "collection_set": {"id": source.collection_set_id}, "collection": {"id": source.collection_id},
        }
        if credentials:
            body["credentials"] = credentials
        return body

    def harvest_start(self, source: Source, job_id: str) -> JSONObject:
        """The harvest.start body with credentials resolved (never log or print it)."""
        credentials = resolve_credentials(self.store, source, env=self.env, box=self.secret_box)
        return self._start_body(source, job_id, credentials)

    # ---- launching ----

    def launch(self, ident: str, *, trigger: str = "manual") -> Job:
        """Write the launch record, then publish harvest.start; the job row says what happened."""
        with self.store.session() as s:
            source = repo.find_source(s, ident)
            self.check_runnable(s, source)
            job = repo.add_job(s, job_id=f"{source.id}-{repo.new_id()}", source=source,
                               routing_key=self.start_routing_key(source), trigger=trigger)
        results = self.publish_pending(only=[job.id])  # empty if a scheduler is publishing it right now
        with self.store.session() as s:
            job = repo.get_job(s, job.id)
        if results and not results[0].published:
            code = job.errors[-1]["code"] if job.errors else codes.UNKNOWN_ERROR
            later = "" if job.errors else "; it stays queued and the scheduler publishes it later"
            raise RequestError((results[0].error or "not published") + later, code=code)
        return job

    def run_here(self, ident: str) -> Job:
        """udata's `harvest run`: the same harvest job in this process, no broker; statuses and WARCs are
        recorded in the store exactly as the monitor records them."""
        from swath.core.jobs import JobContext
        from swath.harvest_job import run_harvest  # the workers' job: claim and state where the storage needs them
        from swath.monitor import record

        with self.store.session() as s:
            source = repo.find_source(s, ident)
            self.check_runnable(s, source)
            job = repo.add_job(s, job_id=f"{source.id}-{repo.new_id()}", source=source,
                               routing_key=self.start_routing_key(source), trigger="sync")
            job.published_at = utcnow()  # never goes through the outbox
        try:
            body = self.harvest_start(source, job.id)
            service = lookup_harvest_type(source.harvest_type).load().service

            def publish(routing_key: str, body: Mapping[str, object]) -> None:
                record(self.store, routing_key, body, data_root=self.config.harvest_base)

            ctx = JobContext(config=self.config, service=service, publish=publish)
            run_harvest(body, routing_key=job.routing_key, ctx=ctx)
        except (RequestError, InvalidMessage) as exc:
            with self.store.session() as s:
                repo.fail_job(s, repo.get_job(s, job.id), exc.code, getattr(exc, "message", str(exc)))
        with self.store.session() as s:
            return repo.get_job(s, job.id)

    def check_runnable(self, s: Session, source: Source) -> None:
        if source.validation != ACCEPTED:
            raise RequestError(f"source {source.name!r} is {source.validation}; `swath harvest validate` it first",
                               code=codes.SOURCE_NOT_VALIDATED)
        busy = repo.active_job(s, source.id)
        if busy is not None:  # the advice names the command that works in that state
            advice = (f"`swath harvest cancel {source.name}` cancels it" if busy.status == QUEUED else
                      f"`swath harvest stop {source.name}` ends it (`swath harvest cancel {source.name}` "
                      "if its worker is gone)")
            raise RequestError(f"source {source.name!r} has job {busy.id} {busy.status}; wait for it, or {advice}",
                               code=codes.SOURCE_BUSY)

    def publish_pending(self, *, only: list[str] | None = None) -> list[PublishResult]:
        """Publish launch records still in the outbox (row-locked, so two schedulers never both send one)."""
        results = []
        with self.store.session() as s:
            jobs = repo.unpublished_jobs(s, lock=True)
            for job in jobs:
                if only is not None and job.id not in only:
                    continue
                results.append(self._publish_job(s, job))
        return results

    def _publish_job(self, s: Session, job: Job) -> PublishResult:
        source = s.get(Source, job.source_id) if job.source_id else None
        if source is None or source.deleted_at is not None:
            repo.fail_job(s, job, codes.BAD_REQUEST, "the source was deleted before its launch was published")
            return PublishResult(job.id, False, "source deleted")
        try:
            body = self.harvest_start(source, job.id)
            self._publish_confirmed(job.routing_key, body)
        except RequestError as exc:
            repo.fail_job(s, job, exc.code, exc.message)
            return PublishResult(job.id, False, exc.message)
        except Unroutable:
            message = (f"no queue is bound for {job.routing_key}: start the {source.platform}_harvester worker "
                       "or run `swath broker setup`")
            repo.fail_job(s, job, codes.NO_WORKER, message)
            return PublishResult(job.id, False, message)
        except (BrokerError, PublishError, TimeoutError) as exc:
            error = exc if isinstance(exc, BrokerError) else BrokerError(
                f"the broker did not confirm harvest.start for {job.id} ({exc or type(exc).__name__}); "
                "check the broker, then launch again")
            # a manual launch is answered now, never left queued for a later scheduler to send; a scheduled
            # one waits in the outbox while the broker is away, but not for a refusal only an operator can cure
            if job.trigger == "manual" or error.fatal:
                repo.fail_job(s, job, error.code, error.message)
            else:
                log.warning("harvest.start for %s not confirmed (%s); it stays in the outbox", job.id, error)
            return PublishResult(job.id, False, error.message)
        job.published_at = utcnow()
        log.info("published %s for source %s", job.routing_key, source.name)
        return PublishResult(job.id, True)

    # ---- stopping ----

    def stop(self, ident: str) -> Job:
        """harvest.stop for the source's running job (or a job id); a queued one is cancelled (swath/job_stops.py)."""
        return self._stops().stop(ident)

    def cancel(self, ident: str) -> Cancelled:
        """Cancel a queued (or stuck running) job so its source is free (swath/job_stops.py)."""
        return self._stops().cancel(ident)

    def worker_queue(self, job: Job) -> QueueState | None:
        """The queue a launched job waits in, with its consumers (`swath.workqueue.QueueState`); None if
        no service takes it or the broker cannot be asked."""
        return self.queue_for(job.routing_key)

    def queue_for(self, routing_key: str) -> QueueState | None:
        """The queue a start with this routing key waits in (a harvest's or an export's), as `worker_queue`."""
        from swath.workqueue import BrokerUnavailable, queue_state

        try:
            return queue_state(self.config, routing_key)
        except BrokerUnavailable:
            return None

    # ---- exports ----

    def start_export(self, *, export_type: str, fmt: str, collection_id: str | None, seeds: list[dict[str, str]],
                     path: str | None, dedupe: bool, segment_size: int | None,
                     dates: dict[str, str | None], options: Mapping[str, object] | None = None) -> Export:
        from swath.exporters.registry import UnknownExportType, start_routing_key

        try:
            key = start_routing_key(export_type)
        except UnknownExportType:
            raise RequestError(f"no exporter for export type {export_type!r}; "
                                                   "`swath export types` lists them", code=codes.UNKNOWN_TYPE) from None
        export_id = repo.new_id()
        path = path or f"exports/{export_id}"
        body: dict[str, object] = {"id": export_id, "type": export_type, "path": path, "format": fmt,
                                   "dedupe": dedupe, "segment_size": segment_size}
        if collection_id:
            body["collection"] = {"id": collection_id}
        else:
            body["seeds"] = seeds
        body.update({k: v for k, v in dates.items() if v})
        if options:
            body["options"] = options
        try:
            ExportStart.from_dict(body)
        except (InvalidMessage, ValueError) as exc:
            raise RequestError(f"invalid export request: {exc}",
                               code=getattr(exc, "code", codes.SCHEMA_INVALID)) from None
        # committed before publishing: the monitor may record its first status before we get the confirm
        with self.store.session() as s:
            export = repo.add_export(s, export_id=export_id, export_type=export_type, fmt=fmt, path=path,
                                     collection_id=collection_id)
        try:
            self._publish_confirmed(key, body)
        except Unroutable:
            message = f"no queue is bound for {key}: start its exporter worker"
            with self.store.session() as s:
                export = repo.get_export(s, export_id)
                export.status, export.errors = FAILURE, [{"code": codes.NO_WORKER, "message": message}]
            raise RequestError(message, code=codes.NO_WORKER) from None
        return export

    # ---- plumbing ----

    def _stops(self) -> JobStops:
        return JobStops(config=self.config, store=self.store, publish=self._publish_confirmed)

    def _publish_confirmed(self, routing_key: str, body: Mapping[str, object]) -> None:
        self._publisher().publish_and_wait(routing_key, body, CONFIRM_TIMEOUT)

    def _publisher(self) -> Publisher:
        if self.publisher is None:
            self.publisher = Publisher(config=self.config, name="swath-requester",
                                       give_up_after=BROKER_GIVE_UP).start()
        return self.publisher

    def close(self) -> None:
        if self.publisher is not None:
            self.publisher.close()
            self.publisher = None
