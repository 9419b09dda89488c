"""The worker runtime: consume start messages, run jobs off the I/O thread, ack after the work is done.

One thread owns the consuming pika BlockingConnection and every ack (dramatiq's rule); jobs run in a
thread pool and hand their acks back with `add_callback_threadsafe`. Heartbeats keep flowing while a job
runs for hours because the I/O thread never blocks on work. Messages that cannot be handled (not JSON,
schema-invalid, unknown type) are published to the dead-letter exchange with the reason in headers, and
the original is acked only after that publish is confirmed, so nothing is dropped silently (messages/refusal.py).

Stops (harvest.stop.<platform>.<type>) arrive on a per-replica exclusive queue bound to the stop keys, so
every replica hears every stop and the one running that harvest acts on it.

The log says what an operator needs and no more: one line when a job starts and one when it ends (id, type,
outcome, seconds), one line per wait for a broker that is away or refuses us (why, and for how long), and at
shutdown what was running and what goes back to the queue.
"""

from __future__ import annotations

import faulthandler
import logging
import signal
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel
from pika.spec import Basic, BasicProperties

from swath.core.config import Config
from swath.core.jobs import Job, JobContext, JobInterrupted
from swath.core.stops import record_stop
from swath.messages import codes
from swath.messages.broker import Publisher, declare_topology, declare_work_queue
from swath.messages.broker_errors import classify
from swath.messages.model import HarvestStop, decode_body
from swath.messages.nodes import Nodes
from swath.messages.refusal import Accepts, Refuser, accepted, delivery_id
from swath.messages.validation import InvalidMessage, validate_for_key

log = logging.getLogger(__name__)

# RabbitMQ closes a channel whose delivery stays unacked longer than consumer_timeout.
_ACK_TIMEOUT_HINT = (
    "the broker's consumer_timeout expired while a job held its message; raise it "
    "(see docs/configuration.md, 'Long harvests and consumer_timeout')"
)


@dataclass(frozen=True)
class ServiceSpec:
    """What one worker service consumes and which job handles each message kind."""

    name: str  # queue name (without prefix) and `swath worker NAME`
    service: str  # human name for status messages
    bindings: list[str]  # start routing keys, e.g. ["harvest.start.twitter.*"]
    job: Job  # runs one start message
    # Returns None if this service handles the body's type, else a readable refusal.
    accepts: Accepts
    stop_bindings: list[str] = field(default_factory=list)  # e.g. ["harvest.stop.twitter.*"]
    concurrency: int = 1  # jobs at once (stream workers run several streams)
    # Called once with the worker's Config when it starts, before it consumes: set-up its jobs share.
    warm_up: Callable[[Config], None] | None = None
    # keys a wider SWATH_PLATFORMS bound this queue to earlier: unbound at start, so they reach other suites only
    unbind: list[str] = field(default_factory=list)


@dataclass
class _Running:
    ctx: JobContext
    channel: BlockingChannel  # the channel the delivery came on; its tag is only valid there
    delivery_tag: int


@dataclass
class _Outcome:
    """What one job's end line says: the last status it published for its own id."""

    job_id: str | None
    status: str | None = None


class Worker:
    """Run one ServiceSpec against the broker until SIGTERM/SIGINT or `request_shutdown()`."""

    def __init__(self, *, config: Config, spec: ServiceSpec, publisher: Publisher | None = None) -> None:
        self.config = config
        self.spec = spec
        self.queue = config.queue_prefix + spec.name
        self.publisher = publisher or Publisher(config=config, name=f"{self.queue}-publisher")
        self._owns_publisher = publisher is None
        self._executor = ThreadPoolExecutor(max_workers=spec.concurrency, thread_name_prefix=spec.name)
        self._running: dict[str, _Running] = {}  # harvest/export id -> running job
        self._lock = threading.Lock()
        self._shutdown = threading.Event()
        self._connection: pika.BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._in_flight = 0  # deliveries taken whose ack/nack has not run on the current connection
        self._jobs = 0  # deliveries whose job has not handed over its ack/nack yet
        self.consuming = threading.Event()  # set while the consumer is attached to its queue
        self.replica = uuid.uuid4().hex[:8]
        self.processed = 0  # messages finished (acked), for tests and the monitor
        self.requeued = 0  # messages handed back to the queue (interrupted or taken during shutdown)
        self._shutdown_logged = False
        self.connections = 0  # consumer connections opened; more than one means we reconnected
        self._nodes = Nodes(config.amqp_url, name=f"{self.queue}-consumer", heartbeat=config.heartbeat)
        self._refuser = Refuser(config=config, publisher=self.publisher, queue=self.queue, service=spec.service,
                                publish=self._publish)

    # ---- lifecycle ----

    def install_signal_handlers(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: self.request_shutdown())
        # `kill -USR1 PID` writes every thread's stack to stderr: how to see what a stuck worker waits for
        faulthandler.register(signal.SIGUSR1, all_threads=True)

    def request_shutdown(self) -> None:
        self._shutdown.set()

    def run(self) -> None:
        if self.spec.warm_up is not None:
            self.spec.warm_up(self.config)
        if self._owns_publisher:
            self.publisher.start()
        delay = 0.5
        try:
            while not self._shutdown.is_set():
                try:
                    self._consume()
                    delay = 0.5
                except (pika.exceptions.AMQPError, OSError) as exc:  # OSError: a name that does not resolve
                    if self._shutdown.is_set():
                        break
                    error = classify(exc, self.config.amqp_url)
                    self._nodes.failed()  # the next attempt starts with the next node of SWATH_AMQP_URL
                    ack_timeout = "acknowledgement" in str(exc) and "timed out" in str(exc)
                    hint = f" ({_ACK_TIMEOUT_HINT})" if ack_timeout else ""
                    # one line per wait, the wait doubling up to SWATH_RECONNECT_MAX_DELAY: no traceback per attempt
                    log.warning("%s waiting for the broker [%s]: %s%s; retrying in %.1fs",
                                self.spec.name, error.code, error.message, hint, delay)
                    self._shutdown.wait(delay)
                    delay = min(delay * 2, self.config.reconnect_max_delay)
        finally:
            self._log_shutdown()
            self._signal_running_to_stop()
            self._executor.shutdown(wait=True)
            if self._owns_publisher:
                self.publisher.close()
            log.info("%s stopped: %d message(s) done, %d handed back to the queue", self.spec.name,
                     self.processed - self.requeued, self.requeued)

    def _log_shutdown(self) -> None:
        """Once: what was running when the shutdown came, and that its messages go back to the queue."""
        if self._shutdown_logged or not self._shutdown.is_set():
            return
        self._shutdown_logged = True
        with self._lock:
            running = sorted(self._running)
        if running:
            log.info("%s shutting down: stopping %d running job(s) (%s); unfinished ones go back to the queue",
                     self.spec.name, len(running), ", ".join(running))
        else:
            log.info("%s shutting down: no job running", self.spec.name)

    def _consume(self) -> None:
        connection = pika.BlockingConnection(self._nodes.parameters())
        self._nodes.connected_to(connection)
        self.connections += 1
        with self._lock:
            # acks queued on a lost connection died with it: what can still settle is the unfinished jobs
            self._in_flight = self._jobs
            self._connection = connection
        try:
            channel = connection.channel()
            self._channel = channel
            declare_topology(channel, self.config)
            declare_work_queue(channel, self.config, self.queue, self.spec.bindings)
            for key in self.spec.unbind:
                channel.queue_unbind(queue=self.queue, exchange=self.config.exchange, routing_key=key)
            channel.basic_qos(prefetch_count=self.spec.concurrency)
            channel.basic_consume(self.queue, on_message_callback=self._on_message)
            if self.spec.stop_bindings:
                stop_queue = channel.queue_declare(queue="", exclusive=True, auto_delete=True).method.queue
                for binding in self.spec.stop_bindings:
                    channel.queue_bind(queue=stop_queue, exchange=self.config.exchange, routing_key=binding)
                channel.basic_consume(stop_queue, on_message_callback=self._on_stop, auto_ack=True)
            log.info("%s consuming %s (bindings %s)", self.spec.name, self.queue, ", ".join(self.spec.bindings))
            self.consuming.set()
            while not self._shutdown.is_set():
                connection.process_data_events(time_limit=0.5)
            # Shutdown: stop taking new work, let running jobs end (they requeue if interrupted).
            self._log_shutdown()
            channel.stop_consuming()
            self._signal_running_to_stop()
            while self._busy():
                connection.process_data_events(time_limit=0.2)
            connection.process_data_events(time_limit=0)
        finally:
            self.consuming.clear()
            self._channel = None
            self._connection = None
            if connection.is_open:
                try:
                    connection.close()
                except pika.exceptions.AMQPError:
                    pass

    def _busy(self) -> bool:
        with self._lock:
            return self._in_flight > 0

    def _signal_running_to_stop(self) -> None:
        with self._lock:
            for running in self._running.values():
                running.ctx.shutdown.set()
                running.ctx.stop.set()

    # ---- I/O thread callbacks ----

    def _on_message(self, channel: BlockingChannel, method: Basic.Deliver, props: BasicProperties, body: bytes) -> None:
        if self._adopt_redelivery(channel, method.delivery_tag, body):
            return
        with self._lock:
            self._in_flight += 1
            self._jobs += 1
        self._executor.submit(self._handle, channel, method.delivery_tag, method.routing_key, body,
                              bool(method.redelivered))

    def _adopt_redelivery(self, channel: BlockingChannel, delivery_tag: int, body: bytes) -> bool:
        """After a reconnect the broker redelivers messages whose jobs are still running here: the running
        job takes over the new delivery (its ack goes there) instead of a second copy starting."""
        try:
            message_id = delivery_id(decode_body(body))
        except InvalidMessage:
            return False
        with self._lock:
            running = self._running.get(message_id) if message_id is not None else None
            if running is None:
                return False
            running.channel, running.delivery_tag = channel, delivery_tag
        log.info("redelivered message %s is still running here; it will be acked when the job ends", message_id)
        return True

    def _on_stop(self, channel: BlockingChannel, method: Basic.Deliver, props: BasicProperties, body: bytes) -> None:
        try:
            stop = HarvestStop.from_dict(decode_body(body))
        except InvalidMessage as exc:
            self._refuser.dead_letter_in_background(method.routing_key, body, exc.code, str(exc))
            return
        with self._lock:
            running = self._running.get(stop.id)
        if running is None:
            # remembered, in case the stream is between workers (redelivery) right now
            record_stop(self.config.data_root, stop.id)
            log.info("stop for harvest %s recorded: not running on this replica (%s)", stop.id, self.replica)
            return
        log.info("stopping harvest %s", stop.id)
        running.ctx.stop.set()

    def _settle(self, channel: BlockingChannel, delivery_tag: int, *, requeue: bool | None) -> None:
        """Ack (requeue=None) or nack; runs on the I/O thread. A tag from a lost channel is dropped:
        the broker has already put that message back."""
        if self._channel is None or channel is not self._channel or not channel.is_open:
            log.warning("delivery %s belongs to a closed channel; the broker will redeliver it", delivery_tag)
        elif requeue is None:
            channel.basic_ack(delivery_tag)
        else:
            channel.basic_nack(delivery_tag, requeue=requeue)
        with self._lock:
            self._in_flight -= 1
            self.processed += 1
            self.requeued += requeue is True

    def _settle_threadsafe(self, channel: BlockingChannel, delivery_tag: int, *, requeue: bool | None) -> None:
        """Hand the ack/nack to the I/O thread; called exactly once per job. Under the lock, so a reconnect
        counts this job either as finished (its callback died with the old connection) or as still to settle."""
        callback = partial(self._settle, channel, delivery_tag, requeue=requeue)
        with self._lock:
            self._jobs -= 1
            connection = self._connection
            if connection is not None and connection.is_open:
                try:
                    connection.add_callback_threadsafe(callback)
                    return
                except Exception:  # connection went away between the check and the call
                    pass
            self._in_flight -= 1

    # ---- worker threads ----

    def _handle(self, channel: BlockingChannel, delivery_tag: int, routing_key: str, body: bytes,
                redelivered: bool) -> None:
        if self._shutdown.is_set():  # prefetched while shutting down: leave it to the next worker
            log.info("message on %s taken during shutdown goes back to the queue", routing_key)
            self._settle_threadsafe(channel, delivery_tag, requeue=True)
            return
        requeue: bool | None = None
        message_id: str | None = None
        started: float | None = None  # set when the job starts: then its end is logged
        outcome = _Outcome(None)
        try:
            parsed = decode_body(body)
            message_id = delivery_id(parsed)  # known before the checks, so a refusal's status names it
            message = accepted(parsed, self.spec.accepts)
            outcome.job_id = message_id
            ctx = JobContext(config=self.config, publish=partial(self._job_publish, outcome),
                             service=self.spec.service, log=logging.getLogger(f"swath.{self.spec.name}"))
            if message_id:
                with self._lock:
                    running = self._running.setdefault(message_id, _Running(ctx, channel, delivery_tag))
                if running.ctx is not ctx:  # the same id is already running here: do not run it twice
                    log.warning("message %s is already running on this worker; dropping the duplicate", message_id)
                    self._settle_threadsafe(channel, delivery_tag, requeue=None)
                    return
                if self._shutdown.is_set():  # shutdown began after the check above: it may have missed this job
                    ctx.shutdown.set()
                    ctx.stop.set()
            try:
                if redelivered:
                    log.info("message %s was redelivered; the job resumes it", message_id)
                started = time.monotonic()
                log.info("job %s started: %s (%s)", message_id or "-", message.get("type"), routing_key)
                self.spec.job(message, routing_key=routing_key, ctx=ctx)
            finally:
                if message_id:
                    with self._lock:
                        running = self._running.pop(message_id)
                    channel, delivery_tag = running.channel, running.delivery_tag
            ended = outcome.status or "no final status"
        except InvalidMessage as exc:
            requeue = self._refuser.refuse(routing_key, body, message_id, exc.code, str(exc))
            ended = f"refused [{exc.code}]"
        except JobInterrupted:
            requeue = True
            ended = "interrupted by shutdown; its message goes back to the queue"
        except Exception as exc:  # a bug in a job must not kill the worker or loop forever
            log.exception("job %s failed unexpectedly", message_id)
            requeue = self._refuser.refuse(routing_key, body, message_id, codes.UNKNOWN_ERROR,
                                   f"unexpected {type(exc).__name__}: {exc}")
            ended = f"failed [{codes.UNKNOWN_ERROR}]"
        if started is not None:
            log.info("job %s ended: %s, %s, %.1fs", message_id or "-", message.get("type"), ended,
                     time.monotonic() - started)
        self._settle_threadsafe(channel, delivery_tag, requeue=requeue)

    def _publish(self, routing_key: str, body: Mapping[str, object]) -> None:
        validate_for_key(routing_key, body)  # a job must never put an invalid message on the wire
        self.publisher.publish(routing_key, body).result()

    def _job_publish(self, outcome: _Outcome, routing_key: str, body: Mapping[str, object]) -> None:
        """A job's publish, noting its own status for the job's end line."""
        self._publish(routing_key, body)
        if routing_key.startswith(("harvest.status.", "export.status.")) and body.get("id") == outcome.job_id:
            outcome.status = str(body.get("status"))


def wait_for(predicate: Callable[[], bool], timeout: float, interval: float = 0.05) -> bool:
    """Poll `predicate` until true or `timeout` seconds pass (used by tests and shutdown paths)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()
