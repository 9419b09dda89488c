"""The dead-letter queue, for operators: peek, requeue to the original routing key, purge.

Peeking takes messages with basic.get and hands them all back unacked (RabbitMQ puts them back in place), so
looking never loses one. A requeue publishes to the exchange with confirms and acks the dead letter only after
the broker confirmed the copy: a failure leaves it where it was. Credentials in a body are masked in every
view (`DeadLetter.view`); the raw body is only ever sent back to the broker.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import NotRequired, TypedDict

import orjson
import pika
import pika.exceptions
from pika.adapters.blocking_connection import BlockingChannel
from pika.spec import Basic, BasicProperties

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.jsontypes import JSON
from swath.core.masking import mask_text, masked
from swath.messages import codes
from swath.messages.broker_errors import classify
from swath.messages.topology import DEAD_QUEUE, DEAD_REASON_CODE, DEAD_REASON_MESSAGE, DEAD_ROUTING_KEY, open_blocking

# headers a dead letter gained on its way to the queue; a requeued copy goes out without them
_DEATH_HEADERS = ("x-death", "x-first-death-", "x-last-death-", "x-swath-error-", "x-swath-original-",
                  "x-delivery-count")
# Why the broker itself dead-lettered a message (x-first-death-reason), as a code and what it means.
_BROKER_REASONS = {
    "delivery_limit": (codes.DELIVERY_LIMIT, "delivered SWATH_DELIVERY_LIMIT times and never acked: its worker died "
                                             "or was stopped each time it handled it (a poison message?)"),
}


class DeadLetterNotFound(SwathError):
    code = codes.DEAD_LETTER_NOT_FOUND


class LetterView(TypedDict):
    """A dead letter as `swath broker dead-letters` prints it (DeadLetter.view), credentials masked."""

    id: str
    routing_key: str
    queue: str | None
    code: str | None
    reason: str | None
    bytes: int
    message_id: JSON
    type: JSON
    body: NotRequired[object]  # with `full`: the parsed body, masked
    headers: NotRequired[dict[str, str]]


@dataclass(frozen=True)
class DeadLetter:
    id: str  # the AMQP message id, or a digest of the body when the publisher set none
    routing_key: str  # where it was first published
    queue: str | None  # the queue that refused it
    code: str | None  # x-swath-error-code
    reason: str | None  # x-swath-error-message
    body: bytes
    headers: dict[str, object]  # AMQP table values
    properties: BasicProperties

    @classmethod
    def of(cls, method: Basic.GetOk | Basic.Deliver, props: BasicProperties, body: bytes) -> DeadLetter:
        headers = dict(props.headers or {})
        code, reason = _text(headers.get(DEAD_REASON_CODE)), _text(headers.get(DEAD_REASON_MESSAGE))
        broker_reason = _text(headers.get("x-first-death-reason"))  # set when the broker dead-lettered it
        if code is None and broker_reason is not None:
            code, reason = _BROKER_REASONS.get(broker_reason, (codes.DEAD_LETTERED, f"the broker dead-lettered it "
                                                                                    f"({broker_reason})"))
        return cls(id=props.message_id or "sha1-" + hashlib.sha1(body).hexdigest()[:16],
                   routing_key=_text(headers.get(DEAD_ROUTING_KEY)) or method.routing_key,
                   queue=_text(headers.get(DEAD_QUEUE)) or _text(headers.get("x-first-death-queue")),
                   code=code, reason=reason, body=body, headers=headers, properties=props)

    def view(self, *, full: bool = False) -> LetterView:
        """What list (and with `full`, show) prints: every credential value masked, wherever it appears."""
        parsed = _json(self.body)
        secrets = _credential_values(parsed)  # masked wherever they appear; URLs lose passwords (core/masking.py)
        data: LetterView = {
            "id": self.id, "routing_key": self.routing_key, "queue": self.queue, "code": self.code,
            "reason": mask_text(self.reason, secrets) if self.reason else self.reason, "bytes": len(self.body),
            "message_id": parsed.get("id") if isinstance(parsed, dict) else None,
            "type": parsed.get("type") if isinstance(parsed, dict) else None,
        }
        if full:
            data["body"] = masked(parsed, secrets) if parsed is not None else None
            data["headers"] = {k: mask_text(_text(v) or repr(v), secrets) for k, v in sorted(self.headers.items())
                               if not k.startswith("x-death")}
        return data

    def republished_properties(self) -> BasicProperties:
        headers = {k: v for k, v in self.headers.items() if not k.startswith(_DEATH_HEADERS)}
        return BasicProperties(content_type=self.properties.content_type or "application/json",
                               delivery_mode=pika.DeliveryMode.Persistent, message_id=self.properties.message_id,
                               headers=headers or None)


@dataclass(frozen=True)
class RequeueResult:
    requeued: list[str]
    failed: dict[str, str]  # id -> why it stayed in the dead-letter queue


class DeadLetters:
    """Operations on `config.dead_letter_queue` over one blocking connection (use `open()`)."""

    def __init__(self, *, config: Config, channel: BlockingChannel) -> None:
        self.config = config
        self.channel = channel
        self.queue = config.dead_letter_queue

    @classmethod
    @contextmanager
    def open(cls, config: Config) -> Iterator[DeadLetters]:
        connection = open_blocking(config, name="swath-dead-letters")
        try:
            yield cls(config=config, channel=connection.channel())
        except (pika.exceptions.AMQPError, OSError) as exc:
            raise classify(exc, config.amqp_url) from None
        finally:
            if connection.is_open:
                try:
                    connection.close()
                except pika.exceptions.AMQPError:
                    pass

    def count(self) -> int:
        try:
            return int(self.channel.queue_declare(queue=self.queue, passive=True).method.message_count)
        except pika.exceptions.ChannelClosedByBroker as exc:
            if exc.reply_code == 404:
                raise DeadLetterNotFound(f"the broker has no dead-letter queue {self.queue!r}: run `swath broker "
                                         "setup` (or set SWATH_DEAD_LETTER_QUEUE to the one you use)") from None
            raise

    def peek(self, limit: int | None = None) -> list[DeadLetter]:
        """The first `limit` dead letters (all when None), left in the queue."""
        return self._scan(_never, limit=limit)[0]

    def find(self, ident: str) -> DeadLetter:
        found = [letter for letter in self.peek() if letter.id == ident]
        if not found:
            raise self._not_found(ident)
        return found[0]

    def requeue(self, ids: set[str] | None) -> RequeueResult:
        """Republish the dead letters named (all when None) to their original routing key; each one leaves the
        dead-letter queue only once the broker confirmed its copy."""
        self.channel.confirm_delivery()
        requeued: list[str] = []
        failed: dict[str, str] = {}

        def act(letter: DeadLetter) -> bool:
            if ids is not None and letter.id not in ids:
                return False
            try:
                self.channel.basic_publish(self.config.exchange, letter.routing_key, letter.body,
                                           properties=letter.republished_properties(), mandatory=True)
            except pika.exceptions.UnroutableError:
                failed[letter.id] = (f"no queue is bound for {letter.routing_key}: start its worker or run "
                                     "`swath broker setup`; it stays in the dead-letter queue")
                return False
            except pika.exceptions.NackError:
                failed[letter.id] = "the broker refused the copy (nack); it stays in the dead-letter queue"
                return False
            requeued.append(letter.id)
            return True

        taken, _ = self._scan(act)
        for ident in sorted((ids or set()) - {letter.id for letter in taken}):
            failed[ident] = f"not in {self.queue!r}"
        return RequeueResult(requeued=requeued, failed=failed)

    def purge(self, ids: set[str] | None) -> tuple[int, list[str]]:
        """Remove the dead letters named (all when None); returns how many went and the ids not found."""
        if ids is None:
            self.count()
            return int(self.channel.queue_purge(self.queue).method.message_count), []
        taken, removed = self._scan(lambda letter: letter.id in ids)
        return len(removed), sorted(ids - {letter.id for letter in taken})

    def _scan(self, act: Callable[[DeadLetter], bool], *,
              limit: int | None = None) -> tuple[list[DeadLetter], list[DeadLetter]]:
        """Take each dead letter once: ack those `act` handled, give the rest back unacked, in place.
        Returns (every one taken, the handled ones)."""
        total = self.count()
        taken: list[DeadLetter] = []
        handled: list[DeadLetter] = []
        try:
            while total > len(taken) and (limit is None or len(taken) < limit):
                method, props, body = self.channel.basic_get(self.queue, auto_ack=False)
                if method is None:
                    break
                letter = DeadLetter.of(method, props, body)
                taken.append(letter)
                if act(letter):
                    self.channel.basic_ack(method.delivery_tag)
                    handled.append(letter)
        finally:
            if self.channel.is_open:
                self.channel.basic_nack(delivery_tag=0, multiple=True, requeue=True)
        return taken, handled

    def _not_found(self, *ids: str) -> DeadLetterNotFound:
        return DeadLetterNotFound(f"no dead letter {', '.join(ids)} in {self.queue!r}: "
                                  "`swath broker dead-letters list` shows their ids")


def _never(_letter: DeadLetter) -> bool:
    return False


def _text(value: object) -> str | None:
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value if isinstance(value, str) else None


def _json(body: bytes) -> JSON:
    try:
        parsed: JSON = orjson.loads(body)
        return parsed
    except orjson.JSONDecodeError:
        return None


def _credential_values(parsed: JSON) -> list[str]:
    """The values under a harvest.start's `credentials` (strings, and strings inside lists or objects)."""
    creds = parsed.get("credentials") if isinstance(parsed, dict) else None
    found: list[str] = []
    stack: list[JSON] = [creds]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and item:
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return sorted(set(found), key=len, reverse=True)  # longest first: a value containing another is masked whole
