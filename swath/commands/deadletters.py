"""`swath broker dead-letters list|show|requeue|purge`: the messages workers refused, with why.

Every view masks credential values (a refused harvest.start carries them); requeue sends a dead letter back to
its original routing key and removes it only once the broker confirmed the copy (swath.messages.deadletters).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import click
import orjson

from swath.commands.common import JSON_OPTION, config_of, emit, handles_errors
from swath.core.errors import SwathError
from swath.core.loglines import printable
from swath.messages import codes

if TYPE_CHECKING:  # the broker client loads only when a command runs
    from swath.messages.deadletters import DeadLetters, LetterView


@contextmanager
def _queue(ctx: click.Context) -> Iterator[DeadLetters]:
    from swath.messages.deadletters import DeadLetters

    with DeadLetters.open(config_of(ctx)) as letters:
        yield letters


def _targets(ids: tuple[str, ...], all_: bool, verb: str) -> set[str] | None:
    if bool(ids) == all_:
        raise SwathError(f"name the dead letters to {verb} (ids from `swath broker dead-letters list`) or give --all",
                         code=codes.BAD_REQUEST)
    return None if all_ else set(ids)


def _line(view: LetterView) -> str:
    reason = printable((view["reason"] or "").replace("\n", " "))
    reason = reason if len(reason) <= 90 else reason[:89] + "…"
    return printable(f"{view['id']}  {view['code'] or '-':<16} {view['routing_key']:<40} "
                     f"{view['message_id'] or '-'}") + f"  {reason}"


@click.group("dead-letters")
def dead_letters() -> None:
    """List, show, requeue or purge the messages in the dead-letter queue (SWATH_DEAD_LETTER_QUEUE)."""


@dead_letters.command("list")
@click.option("--limit", default=100, show_default=True, type=click.IntRange(min=1), help="Show at most this many.")
@JSON_OPTION
@click.pass_context
@handles_errors
def list_(ctx: click.Context, limit: int, as_json: bool) -> None:
    """List dead letters, oldest first: id, reason code, original routing key, message id, reason.

    They stay in the queue.
    """
    with _queue(ctx) as letters:
        total = letters.count()
        views = [letter.view() for letter in letters.peek(limit)]
        queue = letters.queue
    more = f"\n… {total - len(views)} more (--limit)" if total > len(views) else ""
    human = "\n".join(map(_line, views)) + more if views else f"no dead letters in {queue!r}"
    emit({"queue": queue, "total": total, "dead_letters": views}, as_json, human)


@dead_letters.command("show")
@click.argument("ident", metavar="ID")
@JSON_OPTION
@click.pass_context
@handles_errors
def show(ctx: click.Context, ident: str, as_json: bool) -> None:
    """Show one dead letter: why it was refused, its headers and its body (credentials masked)."""
    with _queue(ctx) as letters:
        view = letters.find(ident).view(full=True)
    body = view["body"]
    # every value came with the message: printed with its control characters escaped (ESC, CR, line breaks)
    lines = [printable(f"{k}: {view[k]}") for k in ("id", "code", "reason", "routing_key", "queue", "message_id",
                                                    "type", "bytes")]
    lines += [printable(f"header {k}: {v}") for k, v in view["headers"].items()]
    lines.append("body:" if body is not None else f"body: not JSON ({view['bytes']} bytes), not shown")
    if body is not None:
        lines.append(orjson.dumps(body, option=orjson.OPT_INDENT_2).decode())
    emit(view, as_json, "\n".join(lines))


@dead_letters.command("requeue")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "all_", is_flag=True, help="Every dead letter.")
@JSON_OPTION
@click.pass_context
@handles_errors
def requeue(ctx: click.Context, ids: tuple[str, ...], all_: bool, as_json: bool) -> None:
    """Publish dead letters again to their original routing key (fix the cause first).

    Each leaves the dead-letter queue only after the broker confirmed its copy. Exits 1 if any could not
    be requeued (it stays in the queue).
    """
    with _queue(ctx) as letters:
        result = letters.requeue(_targets(ids, all_, "requeue"))
    lines = [f"requeued {ident}" for ident in result.requeued]
    lines += [f"not requeued {ident}: {why}" for ident, why in result.failed.items()]
    emit({"requeued": result.requeued, "failed": result.failed}, as_json,
         "\n".join(lines) or "no dead letters to requeue")
    if result.failed:
        sys.exit(1)


@dead_letters.command("purge")
@click.argument("ids", nargs=-1, metavar="[ID]...")
@click.option("--all", "all_", is_flag=True, help="Every dead letter.")
@click.option("--yes", is_flag=True, help="Do not ask before purging --all.")
@JSON_OPTION
@click.pass_context
@handles_errors
def purge(ctx: click.Context, ids: tuple[str, ...], all_: bool, yes: bool, as_json: bool) -> None:
    """Delete dead letters for good (the named ones, or --all). Exits 1 if a named one was not found."""
    targets = _targets(ids, all_, "purge")
    if targets is None and not yes:
        click.confirm(f"delete every message in {config_of(ctx).dead_letter_queue!r}?", abort=True, err=True)
    with _queue(ctx) as letters:
        removed, missing = letters.purge(targets)
    text = f"purged {removed} dead letter(s)" + (f"; not found: {', '.join(missing)}" if missing else "")
    emit({"purged": removed, "not_found": missing}, as_json, text)
    if missing:
        sys.exit(1)
