"""The refusal path of the worker runtime: check a delivery, and refuse what cannot be handled.

A refused message is published to the dead-letter exchange with its reason (code, readable message, routing key,
queue) in headers; a start message with an id also gets a failure status, so whoever sent it hears why. The
worker acks the original only after the dead-letter publish is confirmed, so nothing is dropped silently.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from swath.core.config import Config
from swath.core.jobs import Publish
from swath.core.jsontypes import JSON, JSONObject
from swath.messages import codes, retired, routing
from swath.messages.broker import DEAD_QUEUE, DEAD_REASON_CODE, DEAD_REASON_MESSAGE, DEAD_ROUTING_KEY, Publisher
from swath.messages.model import ExportStatus, HarvestStatus, Origin
from swath.messages.validation import InvalidMessage

log = logging.getLogger("swath.messages.worker")  # the worker's log: one place for an operator to read

Accepts = Callable[[JSONObject], str | None]


def delivery_id(parsed: JSON) -> str | None:
    """The message's id, when its decoded body is an object with a text id."""
    found = parsed.get("id") if isinstance(parsed, dict) else None
    return found if isinstance(found, str) else None


def accepted(parsed: JSON, accepts: Accepts) -> JSONObject:
    """The decoded body, if it is a JSON object the service handles; else InvalidMessage with the code why."""
    if not isinstance(parsed, dict):
        raise InvalidMessage("message body must be a JSON object", code=codes.SCHEMA_INVALID)
    refusal = accepts(parsed)
    # a type this service does not run because its API is gone (an exporter still reads its old WARCs)
    if refusal and (retired_why := retired.refusal(parsed.get("type"))):
        raise InvalidMessage(retired_why, code=codes.API_RETIRED)
    if refusal:
        raise InvalidMessage(refusal, code=codes.UNKNOWN_TYPE)
    return parsed


class Refuser:
    """Dead-letters refused deliveries of one worker queue and tells their sender with a failure status."""

    def __init__(self, *, config: Config, publisher: Publisher, queue: str, service: str, publish: Publish) -> None:
        self.config = config
        self.publisher = publisher
        self.queue = queue
        self.service = service
        self._publish = publish  # the worker's checked publish (validates before the wire)

    def refuse(self, routing_key: str, body: bytes, message_id: str | None, code: str, message: str) -> bool | None:
        """Dead-letter the message and, where it has an id, publish a failure status. Returns how to settle."""
        log.warning("refusing message on %s (id %s): %s: %s", routing_key, message_id, code, message)
        try:
            self.dead_letter(routing_key, body, code, message)
        except Exception:
            log.exception("could not dead-letter a refused message; it goes back to the queue")
            return True
        if message_id:
            self._publish_failure(routing_key, message_id, code, message)
        return None

    def dead_letter(self, routing_key: str, body: bytes, code: str, message: str) -> None:
        self.publisher.publish(
            routing_key, body, exchange=self.config.dead_letter_exchange,
            headers={DEAD_REASON_CODE: code, DEAD_REASON_MESSAGE: message[:1000],
                     DEAD_ROUTING_KEY: routing_key, DEAD_QUEUE: self.queue},
        ).result()

    def dead_letter_in_background(self, routing_key: str, body: bytes, code: str, message: str) -> None:
        # Called on the I/O thread: hand the (blocking) publish to a short-lived thread.
        threading.Thread(target=self.dead_letter, args=(routing_key, body, code, message), daemon=True).start()

    def _publish_failure(self, routing_key: str, message_id: str, code: str, message: str) -> None:
        try:
            key = routing.parse(routing_key)
            status_key = str(key.status_key())
        except (routing.BadRoutingKey, KeyError):
            return
        status_classes: dict[str, type[HarvestStatus] | type[ExportStatus]] = {
            "harvest_start": HarvestStatus, "export_start": ExportStatus}
        status_class = status_classes.get(key.kind)
        if status_class is None:
            return
        status = status_class.refused(id=message_id, origin=Origin(service=self.service, host=self.config.host),
                                      code=code, message=message)
        try:
            self._publish(status_key, status.to_dict())
        except Exception:
            log.exception("could not publish the failure status for %s", message_id)
