"""Operations (admins): queues and consumers, dead letters (shown masked, requeued), status messages the
monitor refused, workers seen, disk use per collection; /status is the old dashboard's page (logged in; a member
sees their groups' rows only)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import repo, web_repo
from swath.store.models import Export, Job
from swath.web.views import SECURITY_HEADERS, Ctx, action, admin_only, page


@page
def operations(ctx: Ctx) -> Response:
    admin_only(ctx)
    from swath.dashboard.snapshot import gather

    snap = gather(config=ctx.web.config, store=ctx.store, management_url=ctx.web.management_url)
    with ctx.store.session() as s:
        workers = seen_workers(s)
        sets = {cs.id: cs.name for cs in web_repo.list_sets(s, ctx.user)}
        collections = {(src.collection_set_id, src.collection_id): src for src in repo.list_sources(s, deleted=True)}
    letters, letters_error = dead_letters(ctx)
    return ctx.render("ops.html", snap=snap, workers=workers, sets=sets, collections=collections,
                      letters=letters, letters_error=letters_error)


def seen_workers(s: Any) -> list[tuple[Any, ...]]:
    """(service, host, instance, last report, runs) of harvesters and exporters, newest first; of one service on
    one host only the newest instance (a restarted worker replaces the one before it). Exporters' statuses
    name no host or instance."""
    harvesters = s.execute(select(Job.service, Job.host, Job.instance, func.max(Job.updated_at), func.count())
                           .where(Job.service.is_not(None)).group_by(Job.service, Job.host, Job.instance))
    exporters = s.execute(select(Export.service, func.max(Export.updated_at), func.count())
                          .where(Export.service.is_not(None)).group_by(Export.service))
    rows = [*harvesters, *((service, None, None, last, n) for service, last, n in exporters)]
    newest: dict[tuple[Any, Any], tuple[Any, ...]] = {}
    for row in sorted(rows, key=lambda r: r[3], reverse=True):
        newest.setdefault((row[0], row[1]), tuple(row))
    return list(newest.values())


def dead_letters(ctx: Ctx) -> tuple[list[dict[str, Any]], str | None]:
    """The first dead letters as `swath broker dead-letters list` shows them (ids to requeue by, credentials
    masked), left in the queue; or why they could not be read."""
    from swath.dashboard.snapshot import PEEK_LIMIT
    from swath.messages.deadletters import DeadLetters

    try:
        with DeadLetters.open(ctx.web.config) as letters:
            return [letter.view() for letter in letters.peek(PEEK_LIMIT)], None
    except SwathError as exc:
        return [], exc.message


@action
def requeue(ctx: Ctx) -> Response:
    admin_only(ctx)
    from swath.messages.deadletters import DeadLetters

    letter = ctx.field("id")
    if not letter:
        raise SwathError("which dead letter? (its id)", code=codes.BAD_REQUEST)
    with DeadLetters.open(ctx.web.config) as letters:
        result = letters.requeue({letter})
    said = f"requeued {letter}" if letter in result.requeued else f"{letter} stayed: {result.failed.get(letter)}"
    return ctx.redirect("/ops", flash=said)


@page
def status_page(ctx: Ctx) -> Response:
    """The read-only status page `swath dashboard` serves, here for a logged-in user: an admin sees everything
    (as the dashboard shows it), a member only the collection sets of their groups."""
    from swath.dashboard.render import render
    from swath.dashboard.snapshot import gather
    from swath.store.models import utcnow

    with ctx.store.session() as s:
        sets = None if ctx.user.is_admin else {cs.id for cs in web_repo.list_sets(s, ctx.user)}
    snap = gather(config=ctx.web.config, store=ctx.store, management_url=ctx.web.management_url, sets=sets)
    part = ctx.request.url.path.endswith("/live")  # no meta refresh: the page fetches this part (live.js)
    return HTMLResponse(render(snap, refresh=None, generated=utcnow().isoformat(timespec="seconds") + "Z",
                               live_url="/status/live", part=part), headers={**SECURITY_HEADERS, "X-Swath-Final": "0"})


ROUTES = [
    Route("/ops", operations, methods=["GET"]),
    Route("/ops/deadletters/requeue", requeue, methods=["POST"]),
    Route("/status", status_page, methods=["GET"]),
    Route("/status/live", status_page, methods=["GET"]),
]
