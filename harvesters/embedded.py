"""The in-process runner behind `swath harvest run MESSAGE`: the same job, no broker.

Publishing prints one JSON line per message, `{"routing_key": ..., "message": ...}`, on stdout;
progress goes to stderr when it is a terminal. First Ctrl-C stops a stream harvest (final WARC
and status follow); a second one shuts down, leaving the harvest resumable.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from swath.core.config import Config
from swath.core.jobs import JobContext, JobInterrupted, Publish
from swath.harvesters import registry
from swath.harvesters.redaction import install_log_filter
from swath.messages.model import COMPLETED_SUCCESS, decode_body
from swath.messages.routing import key as routing_key_for
from swath.messages.validation import InvalidMessage, validate, validate_for_key

EXIT_SUCCESS, EXIT_FAILURE, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 3


def print_publish(out: TextIO, sent: list[dict[str, Any]] | None = None) -> Publish:
    """A publish function writing JSON lines (one message each) to `out`; also keeps them in `sent`.
    Each message is validated first, as the broker worker does: an invalid one raises InvalidMessage."""
    lock = threading.Lock()

    def publish(routing_key: str, body: dict[str, Any]) -> None:
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


def default_routing_key(body: dict[str, Any]) -> str:
    """harvest.start.<platform>.<type> for a start message, from the registry."""
    validate("harvest_start", body)  # a missing or misspelt 'type' is said as such, not as an unknown type ''
    htype = registry.lookup(str(body.get("type", "")))
    return routing_key_for("harvest_start", htype.platform, htype.name)


def run_message(body: dict[str, Any], *, config: Config, routing_key: str | None = None,
                out: TextIO = sys.stdout, err: TextIO = sys.stderr, stop: threading.Event | None = None,
                shutdown: threading.Event | None = None) -> int:
    """Run one harvest start message in this process; returns an exit code (EXIT_*)."""
    from swath.harvesters.run import run_harvest

    sent: list[dict[str, Any]] = []
    try:
        routing_key = routing_key or default_routing_key(body)
    except (registry.UnknownHarvestType, InvalidMessage) as exc:
        err.write(f"error [{exc.code}]: {exc.message}\n")
        return EXIT_INVALID
    ctx = JobContext(config=config, publish=print_publish(out, sent), service="swath harvest run",
                     stop=stop or threading.Event(), shutdown=shutdown or threading.Event(),
                     log=logging.getLogger("swath.harvest"), progress=terminal_progress(err))
    try:
        run_harvest(body, routing_key=routing_key, ctx=ctx)
    except InvalidMessage as exc:
        err.write(f"error [{exc.code}]: {exc}\n")
        return EXIT_INVALID
    except JobInterrupted as exc:
        err.write(f"\n{exc}; run the same message again to resume\n")
        return EXIT_INTERRUPTED
    finally:
        if hasattr(err, "isatty") and err.isatty():
            err.write("\n")
    statuses = [m["message"] for m in sent if m["routing_key"].startswith("harvest.status.")]
    ok = bool(statuses) and statuses[-1].get("status") == COMPLETED_SUCCESS
    return EXIT_SUCCESS if ok else EXIT_FAILURE


def install_signal_handlers(stop: threading.Event, shutdown: threading.Event) -> None:
    """First SIGINT/SIGTERM: stop (streams end cleanly); second: shutdown (resumable)."""

    def handle(signum: int, frame: Any) -> None:
        if stop.is_set():
            shutdown.set()
        stop.set()

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
    except InvalidMessage as exc:
        sys.stderr.write(f"error [{exc.code}]: {exc}\n")
        return EXIT_INVALID
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s")
    install_log_filter()  # every record reaching stderr is redacted, whichever library logged it
    stop, shutdown = threading.Event(), threading.Event()
    install_signal_handlers(stop, shutdown)
    return run_message(body, config=Config.from_env(), routing_key=args[1] if len(args) > 1 else None,
                       stop=stop, shutdown=shutdown)


if __name__ == "__main__":
    sys.exit(main())
