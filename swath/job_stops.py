"""Ending a launched harvest: `stop` sends harvest.stop to the worker running it; `cancel` frees a source whose
job is queued (or stuck running), taking its start back from the outbox or the worker queue as far as the
broker allows. The requester (swath/requester.py) hands each request here."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.messages import codes, routing
from swath.messages.broker import PublishError, Unroutable
from swath.request_error import RequestError
from swath.store import Store, repo
from swath.store.models import ACTIVE_STATES, QUEUED, RUNNING, Job, utcnow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cancelled:
    job: Job
    how: str  # what happened to its harvest.start, for the user


@dataclass(frozen=True, kw_only=True)
class JobStops:
    config: Config
    store: Store
    publish: Callable[[str, Mapping[str, object]], None]  # returns once the broker confirmed; Unroutable if no queue

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

    def _target_job(self, s: Session, ident: str) -> Job:
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
        self.publish(routing.key("harvest_stop", key.platform, key.type), {"id": job.id})

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
