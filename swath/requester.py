"""The requester side of SFM messaging: harvest sources, launches (through an outbox), stops and exports.

Launching writes a launch record (a `jobs` row with no `published_at`) and commits it before publishing
`harvest.start`; the row is marked published once the broker confirmed the message. Credentials are stored
as references ("env:VAR" or "stored") and resolved only while building the message; "stored" values are
sealed with the configured key (swath/store/secrets.py) and opened only then.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.harvesters.registry import lookup as lookup_harvest_type
from swath.messages import codes, routing
from swath.messages.broker import Publisher, PublishError, Unroutable
from swath.messages.broker_errors import BrokerError
from swath.messages.model import ExportStart, HarvestStart
from swath.messages.validation import InvalidMessage
from swath.store import Store, group_credentials, repo
from swath.store.models import ACCEPTED, ACTIVE_STATES, FAILURE, QUEUED, RUNNING, Export, Job, Source, utcnow
from swath.store.secrets import CredentialKeyError, SecretBox

log = logging.getLogger(__name__)
STORED = "stored"
CREDENTIAL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
ENV_PREFIX = "env:"
CONFIRM_TIMEOUT = 30.0
BROKER_GIVE_UP = 5.0  # seconds a publish waits for an unreachable broker; a refused login fails at once


class RequestError(SwathError):
    """A request swath refuses, with a stable code from messages/codes.py."""


@dataclass(frozen=True)
class Cancelled:
    job: Job
    how: str  # what happened to its harvest.start, for the user


@dataclass(frozen=True)
class PublishResult:
    job_id: str
    published: bool
    error: str | None = None


def check_credential_name(name: str) -> str:
    if not CREDENTIAL_NAME.fullmatch(name):
        # it may be a secret typed in the wrong place: say what is wrong, never echo it
        raise RequestError("a credential name is a letter or _ then letters, digits, _ . or - (at most 100); "
                           "give NAME=env:VARIABLE, NAME=@FILE, or NAME alone to be prompted",
                           code=codes.BAD_REQUEST)
    return name


def parse_credentials(pairs: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """NAME=env:VAR (a reference) or NAME=VALUE (kept in the store, sealed) -> (references, stored values)."""
    refs: dict[str, str] = {}
    stored: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise RequestError("a credential is NAME=env:VARIABLE or NAME=VALUE", code=codes.BAD_REQUEST)
        check_credential_name(name)
        if value.startswith((ENV_PREFIX, group_credentials.PREFIX)):  # references, no value
            refs[name] = value
        else:
            refs[name], stored[name] = STORED, value
    return refs, stored


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

    def create_source(self, *, name: str, harvest_type: str, seeds: list[dict[str, Any]],
                      options: dict[str, Any], credentials: Iterable[str], collection_set_id: str,
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

    def _start_body(self, source: Source, job_id: str, credentials: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": job_id, "type": source.harvest_type, "path": collection_path(source),
            "seeds": source.seeds, "options": source.options,
            "collection_set": {"id": source.collection_set_id}, "collection": {"id": source.collection_id},
        }
        if credentials:
            body["credentials"] = credentials
        return body

    def harvest_start(self, source: Source, job_id: str) -> dict[str, Any]:
        """The harvest.start body with credentials resolved (never log or print it)."""
        stored: dict[str, str] = {}
        shared = group_credentials.referenced(source)
        if STORED in source.credentials.values() or shared:
            try:
                with self.store.session() as s:
                    stored = repo.secrets_of(s, source, self.secret_box())
                    stored |= group_credentials.values_for(s, source, self.secret_box()) if shared else {}
            except CredentialKeyError as exc:  # a RequestError, so a scheduled launch fails its job with the code
                raise RequestError(exc.message, code=exc.code) from None
        resolved: dict[str, Any] = {}
        for name, ref in source.credentials.items():
            env = ref.startswith(ENV_PREFIX)
            value = self.env.get(ref[len(ENV_PREFIX):]) if env else stored.get(name)
            if not value:
                where = f"environment variable {ref[len(ENV_PREFIX):]}" if env else (
                    "the store" if ref == STORED else "its group's credential (deleted, or of another group)")
                raise RequestError(f"credential {name!r} of source {source.name!r} has no value in {where}",
                                   code=codes.CREDENTIAL_MISSING)
            resolved[name] = value
        return self._start_body(source, job_id, resolved)

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

            def publish(routing_key: str, body: dict[str, Any]) -> None:
                record(self.store, routing_key, body, data_root=self.config.harvest_base)

            ctx = JobContext(config=self.config, service=service, publish=publish)
            run_harvest(body, routing_key=job.routing_key, ctx=ctx)
        except (RequestError, InvalidMessage) as exc:
            with self.store.session() as s:
                repo.fail_job(s, repo.get_job(s, job.id), exc.code, getattr(exc, "message", str(exc)))
        with self.store.session() as s:
            return repo.get_job(s, job.id)

    def check_runnable(self, s: Any, source: Source) -> None:
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

    def _publish_job(self, s: Any, job: Job) -> PublishResult:
        source = s.get(Source, job.source_id) if job.source_id else None
        if source is None or source.deleted_at is not None:
            repo.fail_job(s, job, codes.BAD_REQUEST, "the source was deleted before its launch was published")
            return PublishResult(job.id, False, "source deleted")
        try:
            body = self.harvest_start(source, job.id)
            self._publisher().publish(job.routing_key, body).result(CONFIRM_TIMEOUT)
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

    def _target_job(self, s: Any, ident: str) -> Job:
        """A job by id, or the source's (by id or name) queued or running job."""
        job = s.get(Job, ident)
        if job is None:
            source = repo.find_source(s, ident)
            job = repo.active_job(s, source.id)
            if job is None:
                raise RequestError(f"source {source.name!r} has no queued or running job", code=codes.BAD_REQUEST)
        return job

    def _send_stop(self, job: Job) -> None:
        """harvest.stop for the job; Unroutable when no worker of its platform listens."""
        key = routing.parse(job.routing_key)
        self._publisher().publish(routing.key("harvest_stop", key.platform, key.type),
                                  {"id": job.id}).result(CONFIRM_TIMEOUT)

    def stop(self, ident: str) -> Job:
        """Publish harvest.stop for the source's running job (or a job id); every replica of the
        platform's worker hears it on its own stop queue and the one running the harvest ends it.
        A job still queued is cancelled instead (`cancel`): no worker has it to hear a stop."""
        with self.store.session() as s:
            job = self._target_job(s, ident)
            status, job_id = job.status, job.id
        if status == QUEUED:
            return self.cancel(job_id).job
        with self.store.session() as s:
            job = repo.get_job(s, job_id)
            if job.status != RUNNING:
                raise RequestError(f"job {job.id} is {job.status} already", code=codes.BAD_REQUEST)
            key = routing.parse(job.routing_key)
            try:
                self._send_stop(job)
            except Unroutable:
                raise RequestError(f"no {key.platform} worker is running to hear the stop of job {job.id}: start "
                                   f"one (the harvest resumes there, then stop it), or `swath harvest cancel {job.id}` "
                                   "to give it up", code=codes.NO_WORKER) from None
            job.stop_requested_at = utcnow()
            return job

    def cancel(self, ident: str) -> Cancelled:
        """Cancel a queued (or stuck running) job so its source is free: a start still in the outbox is never
        published, one waiting in the worker queue is taken out of it; one a worker already holds is told to
        stop (harvest.stop, and the stop recorded in the data root for a worker that picks it up later)."""
        with self.store.session() as s:
            job = self._target_job(s, ident)
            if job.status not in ACTIVE_STATES:
                raise RequestError(f"job {job.id} is {job.status}; only a queued or running job can be cancelled",
                                   code=codes.BAD_REQUEST)
            done = self._take_back(job) if job.published_at is not None else "it was never published"
            repo.cancel_job(s, job)
            log.info("job %s cancelled: %s", job.id, done)
            return Cancelled(job=job, how=done)

    def _take_back(self, job: Job) -> str:
        """Undo a published start as far as the broker allows; says what was done."""
        from swath.core.stops import record_stop
        from swath.workqueue import BrokerUnavailable, queue_state, withdraw

        try:
            state = queue_state(self.config, job.routing_key)
            if state is not None and job.status == QUEUED and withdraw(self.config, state.queue, job.id):
                return f"its harvest.start was taken out of queue {state.queue}"
        except BrokerUnavailable as exc:
            log.warning("job %s: %s; cancelling it in the store only", job.id, exc.message)
        record_stop(self.config.data_root, job.id)  # a worker taking the start later stops it at once
        job.stop_requested_at = utcnow()
        try:
            self._send_stop(job)
            return "a worker holds it: harvest.stop sent (a stream or an xesam_pmh crawl ends; a REST harvest runs on)"
        except Unroutable:
            return "no worker holds it; the stop is recorded in the data root for one that takes it later"
        except (PublishError, TimeoutError) as exc:
            return f"the broker did not confirm harvest.stop ({exc}); the stop is recorded in the data root"

    def worker_queue(self, job: Job) -> Any:
        """The queue a launched job waits in, with its consumers (`swath.workqueue.QueueState`); None if
        no service takes it or the broker cannot be asked."""
        from swath.workqueue import BrokerUnavailable, queue_state

        try:
            return queue_state(self.config, job.routing_key)
        except BrokerUnavailable:
            return None

    # ---- exports ----

    def start_export(self, *, export_type: str, fmt: str, collection_id: str | None, seeds: list[dict[str, str]],
                     path: str | None, dedupe: bool, segment_size: int | None,
                     dates: dict[str, str | None], options: dict[str, Any] | None = None) -> Export:
        from swath.exporters.registry import UnknownExportType, start_routing_key

        try:
            key = start_routing_key(export_type)
        except UnknownExportType:
            raise RequestError(f"no exporter for export type {export_type!r}; "
                                                   "`swath export types` lists them", code=codes.UNKNOWN_TYPE) from None
        export_id = repo.new_id()
        body: dict[str, Any] = {"id": export_id, "type": export_type, "path": path or f"exports/{export_id}",
                                "format": fmt, "dedupe": dedupe, "segment_size": segment_size}
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
            export = repo.add_export(s, export_id=export_id, export_type=export_type, fmt=fmt, path=body["path"],
                                     collection_id=collection_id)
        try:
            self._publisher().publish(key, body).result(CONFIRM_TIMEOUT)
        except Unroutable:
            message = f"no queue is bound for {key}: start its exporter worker"
            with self.store.session() as s:
                export = repo.get_export(s, export_id)
                export.status, export.errors = FAILURE, [{"code": codes.NO_WORKER, "message": message}]
            raise RequestError(message, code=codes.NO_WORKER) from None
        return export

    # ---- plumbing ----

    def _publisher(self) -> Publisher:
        if self.publisher is None:
            self.publisher = Publisher(config=self.config, name="swath-requester",
                                       give_up_after=BROKER_GIVE_UP).start()
        return self.publisher

    def close(self) -> None:
        if self.publisher is not None:
            self.publisher.close()
            self.publisher = None
