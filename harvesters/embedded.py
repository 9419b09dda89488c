"""The in-process runner behind `swath harvest run MESSAGE`: the same job, no broker.

Publishing prints one JSON line per message, `{"routing_key": ..., "message": ...}`, on stdout;
progress goes to stderr when it is a terminal. First Ctrl-C stops a stream harvest (final WARC
and status follow) or interrupts any other harvest (resumable) and says which; a second one shuts a
stream down too, leaving it resumable. A message whose harvest already finished harvests nothing and
exits EXIT_ALREADY_FINISHED with a line saying so.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, TextIO, TypedDict

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.jobs import JobContext, JobInterrupted, Publish
from swath.core.jsontypes import JSONObject
from swath.core.loglines import log_to_stderr
from swath.core.paths import harvest_path
from swath.harvesters import registry
from swath.harvesters.outcome import FinalOutcome
from swath.harvesters.redaction import install_log_filter
from swath.messages import codes
from swath.messages.bodies import StatusBody
from swath.messages.model import COMPLETED_FAILURE, COMPLETED_SUCCESS, HarvestStart, decode_body
from swath.messages.routing import key as routing_key_for
from swath.messages.validation import InvalidMessage, validate, validate_for_key

if TYPE_CHECKING:
    from swath.harvesters.coordination import Coordination

EXIT_SUCCESS, EXIT_FAILURE, EXIT_INVALID, EXIT_INTERRUPTED, EXIT_ALREADY_FINISHED = 0, 1, 2, 3, 4
MAX_RETRIES = 1000  # `--retry` ids of one message looked at before giving up on finding one not failed
# what the first Ctrl-C does, said at once (the harvest may take a while to get there)
STOPPING_STREAM = ("stopping: the stream is closed, its last WARC written and the final status published; "
                   "everything received so far is kept. Ctrl-C again to interrupt at once (resumable).")
INTERRUPTING = ("interrupting: the WARCs written so far and the one in progress are closed and kept, with no "
                "final status; run the same message again to resume from there.")


class Sent(TypedDict):
    """One message print_publish wrote."""

    routing_key: str
    message: Mapping[str, object]


def print_publish(out: TextIO, sent: list[Sent] | None = None) -> Publish:
    """A publish function writing JSON lines (one message each) to `out`; also keeps them in `sent`.
    Each message is validated first, as the broker worker does: an invalid one raises InvalidMessage."""
    lock = threading.Lock()

    def publish(routing_key: str, body: Mapping[str, object]) -> None:
        validate_for_key(routing_key, body)
        line = json.dumps({"routing_key": routing_key, "message": body}, ensure_ascii=False)
        with lock:
            out.write(line + "\n")
            out.flush()
            if sent is not None:
                sent.append({"routing_key": routing_key, "message": body})

    return publish


def terminal_progress(err: TextIO) -> Callable[[str], None]:
    """One rewritten progress line on a terminal; nothing when stderr is a file or pipe."""
    if not (hasattr(err, "isatty") and err.isatty()):
        return lambda text: None

    def show(text: str) -> None:
        err.write("\r" + text[:200].ljust(80))
        err.flush()

    return show


def default_routing_key(body: JSONObject) -> str:
    """harvest.start.<platform>.<type> for a start message, from the registry."""
    validate("harvest_start", body)  # a missing or misspelt 'type' is said as such, not as an unknown type ''
    htype = registry.lookup(str(body.get("type", "")))
    return routing_key_for("harvest_start", htype.platform, htype.name)


def is_stream_message(body: JSONObject) -> bool:
    """Whether harvest.stop ends this start cleanly (so a first Ctrl-C stops it rather than interrupting):
    every stream, and a harvest that honours stop (Harvester.honours_stop, e.g. xesam_pmh)."""
    try:
        return registry.lookup(str(body.get("type", ""))).load().honours_stop(HarvestStart.from_dict(body))
    except Exception:  # a faulty message: run_harvest reports it, with its code
        return False


def earlier_final_status(body: JSONObject, config: Config,
                         coordination: Coordination | None = None) -> StatusBody | None:
    """The final status a run of this very harvest id recorded (run_harvest then publishes nothing), where
    `coordination` keeps it (None: the file under the data root)."""
    start = HarvestStart.from_dict(body)
    directory = harvest_path(config, start.path)
    if coordination is None:
        record = FinalOutcome(directory=directory, harvest_id=start.id).read()
    else:  # a claim made, never taken: reading needs none
        claim = coordination.claim(start.id, instance="lookup")
        record = coordination.outcome(directory=directory, claim=claim).read()
    return record["status"] if record else None


def retry_id(body: JSONObject, config: Config, coordination: Coordination | None = None) -> str:
    """The id `--retry` runs this start under: its own unless that harvest ended in failure, else the first of
    `<id>.retry-1`, `-2`, ... that has not failed. A retry id shares the message's path, so the collection's
    state (incremental points, tokens) carries on; a finished success stays finished (EXIT_ALREADY_FINISHED)."""
    harvest_id = str(body.get("id", ""))
    for attempt in range(MAX_RETRIES + 1):
        candidate = f"{harvest_id}.retry-{attempt}" if attempt else harvest_id
        try:
            earlier = earlier_final_status({**body, "id": candidate}, config, coordination)
        except SwathError:  # an invalid message: run_message refuses it with its code
            return harvest_id
        if earlier is None or earlier.get("status") != COMPLETED_FAILURE:
            return candidate
    return candidate


def run_message(body: JSONObject, *, config: Config, routing_key: str | None = None,
                out: TextIO = sys.stdout, err: TextIO = sys.stderr, stop: threading.Event | None = None,
                shutdown: threading.Event | None = None, as_json: bool = False,
                coordination: Coordination | None = None) -> int:
    """Run one harvest start message in this process; returns an exit code (EXIT_*). With `as_json` a
    refusal is also a JSON line `{"error": {"code", "message"}}` on `out`. `coordination`: run_harvest's."""
    from swath.harvesters.run import run_harvest

    def refuse(code: str, message: str, **extra: object) -> None:
        err.write(f"error [{code}]: {message}\n")
        if as_json:
            out.write(json.dumps({"error": {"code": code, "message": message}, **extra}, ensure_ascii=False) + "\n")
            out.flush()

    sent: list[Sent] = []
    try:
        routing_key = routing_key or default_routing_key(body)
    except (registry.UnknownHarvestType, InvalidMessage) as exc:
        refuse(exc.code or codes.UNKNOWN_TYPE, exc.message)
        return EXIT_INVALID
    ctx = JobContext(config=config, publish=print_publish(out, sent), service="swath harvest run",
                     stop=stop or threading.Event(), shutdown=shutdown or threading.Event(),
                     log=logging.getLogger("swath.harvest"), progress=terminal_progress(err))
    try:
        run_harvest(body, routing_key=routing_key, ctx=ctx, coordination=coordination)
    except InvalidMessage as exc:
        refuse(exc.code or codes.SCHEMA_INVALID, str(exc))
        return EXIT_INVALID
    except JobInterrupted as exc:
        err.write(f"\n{exc}; run the same message again to resume\n")
        return EXIT_INTERRUPTED
    finally:
        if hasattr(err, "isatty") and err.isatty():
            err.write("\n")
    statuses = [m["message"] for m in sent if m["routing_key"].startswith("harvest.status.")]
    earlier = None if statuses else earlier_final_status(body, config, coordination)
    if earlier is not None:  # a cron job re-running its message must tell this from a failure
        refuse(codes.ALREADY_FINISHED, f"harvest {earlier['id']} already finished ({earlier['status']}, ended "
               f"{earlier.get('date_ended') or '-'}); nothing harvested. Use a new id to harvest again.",
               status=earlier)
        return EXIT_ALREADY_FINISHED
    ok = bool(statuses) and statuses[-1].get("status") == COMPLETED_SUCCESS
    return EXIT_SUCCESS if ok else EXIT_FAILURE


def stderr_notice(text: str) -> None:
    """A line on stderr from a signal handler: a raw write, never re-entering a buffered stream mid-write."""
    os.write(sys.stderr.fileno(), f"\n{text}\n".encode())


def install_signal_handlers(stop: threading.Event, shutdown: threading.Event, *, stream: bool = True,
                            notify: Callable[[str], None] | None = None) -> None:
    """First SIGINT/SIGTERM: stop (a stream ends cleanly; with `stream=False` it is a shutdown at once, since
    a REST harvest ignores stop); second: shutdown (resumable). `notify` is told what the first one does."""

    def handle(signum: int, frame: FrameType | None) -> None:
        first = not stop.is_set()
        if not (first and stream):
            shutdown.set()
        stop.set()
        if first and notify is not None:
            notify(STOPPING_STREAM if stream else INTERRUPTING)

    signal.signal(signal.SIGINT, handle)
    signal.signal(signal.SIGTERM, handle)


def main(argv: list[str] | None = None) -> int:
    """`python -m swath.harvesters.embedded MESSAGE.json [ROUTING_KEY]` (the lead's CLI wraps the same)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        sys.stderr.write("usage: python -m swath.harvesters.embedded MESSAGE.json [ROUTING_KEY]\n")
        return EXIT_INVALID
    try:
        body = decode_body(Path(args[0]).read_bytes())
        if not isinstance(body, dict):  # the words the worker refuses such a body with (messages/refusal.py)
            raise InvalidMessage("message body must be a JSON object", code=codes.SCHEMA_INVALID)
    except InvalidMessage as exc:
        sys.stderr.write(f"error [{exc.code}]: {exc}\n")
        return EXIT_INVALID
    log_to_stderr(logging.INFO, fmt="%(asctime)s %(levelname)s %(message)s")
    install_log_filter()  # every record reaching stderr is redacted, whichever library logged it
    stop, shutdown = threading.Event(), threading.Event()
    install_signal_handlers(stop, shutdown, stream=is_stream_message(body), notify=stderr_notice)
    return run_message(body, config=Config.from_env(), routing_key=args[1] if len(args) > 1 else None,
                       stop=stop, shutdown=shutdown)


if __name__ == "__main__":
    sys.exit(main())
