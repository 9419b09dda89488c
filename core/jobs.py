"""The contract between the worker runtime (or the embedded runner) and the code doing the work.

A harvester or exporter gets a JobContext: where to publish, when to stop, and the configuration.
The same job code runs from RabbitMQ (`swath worker`) or in-process (`swath harvest run`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from swath.core.config import Config
from swath.core.jsontypes import JSONObject


class Publish(Protocol):
    def __call__(self, routing_key: str, body: Mapping[str, object]) -> None:
        """Publish `body` on `routing_key`; returns once the broker confirmed it (or it was printed)."""


@dataclass(kw_only=True)
class JobContext:
    config: Config
    publish: Publish
    service: str  # human service name for status messages, e.g. "Twitter Harvester"
    # Set when the job must end early: a harvest.stop for this id, or worker shutdown.
    stop: threading.Event = field(default_factory=threading.Event)
    # Set together with `stop` when the worker is shutting down: the job should leave its
    # message unfinished (resumable) rather than report a final status.
    shutdown: threading.Event = field(default_factory=threading.Event)
    log: logging.Logger = field(default_factory=lambda: logging.getLogger("swath"))
    # Called with human progress text; the embedded runner shows it on a terminal.
    progress: Callable[[str], None] = lambda text: None
    instance: str = field(default_factory=lambda: str(os.getpid()))


class JobInterrupted(Exception):
    """Raised by a job that stopped because the worker is shutting down; its message is requeued."""


class Job(Protocol):
    def __call__(self, body: JSONObject, *, routing_key: str, ctx: JobContext) -> None:
        """Do the work for one validated start message, publishing statuses through ctx.publish."""
