"""Operations (admins): queues and consumers, dead letters (shown masked, requeued), status messages the
monitor refused, workers and exporters by their last status, free space, disk use per collection; /status is
the old dashboard's page (logged in; a member sees their groups' rows only)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import repo, web_repo
from swath.web import prefix
from swath.web.ops_services import services_and_disk
from swath.web.paging import pager
from swath.web.views import SECURITY_HEADERS, Ctx, action, admin_only, page

LIVE_EVERY = 10  # seconds between the status and operations pages' updates while they are open

if TYPE_CHECKING:  # the broker client loads only when the page asks
    from swath.messages.deadletters import LetterView


@page
def operations(ctx: Ctx) -> Response:
    """The page, or at /ops/live.json its changing parts (static/live.js), through the same steps."""
    admin_only(ctx)
    from swath.shared import live_parts
    from swath.shared.snapshot import gather
    from swath.store.models import utcnow

    snap = gather(config=ctx.web.config, store=ctx.store, management_url=ctx.web.management_url)
    with ctx.store.session() as s:
        sets = {cs.id: cs.name for cs in web_repo.list_sets(s, ctx.user)}
        collections = {(src.collection_set_id, src.collection_id): src for src in repo.list_sources(s, deleted=True)}
    letters, letters_error = dead_letters(ctx)
    generated = utcnow().isoformat(timespec="seconds") + "Z"
    live = ctx.request.url.path.endswith("/live.json")
    shown = {"snap": snap, "sets": sets, "collections": collections, **services_and_disk(ctx), "letters": letters,
             "letters_error": letters_error, "generated": generated, "every": LIVE_EVERY}
    if live:  # the flash is the page's, not its parts'
        page = ctx.render("ops.html", 200, notice=None, **shown)
        return JSONResponse({"generated": generated, "parts": live_parts.split(bytes(page.body).decode())},
                            headers=SECURITY_HEADERS)
    return ctx.render("ops.html", 200, **shown)


def dead_letters(ctx: Ctx) -> tuple[list[LetterView], str | None]:
    """The first dead letters as `swath broker dead-letters list` shows them (ids to requeue by, credentials
    masked), left in the queue; or why they could not be read."""
    from swath.messages.deadletters import DeadLetters
    from swath.shared.snapshot import PEEK_LIMIT

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
    (as the dashboard shows it), a member only the collection sets of their groups. /status/live.json is its
    changing parts for static/live.js, through the same steps, so the same rows."""
    from swath.shared.snapshot import Window, count_rows, gather
    from swath.shared.status_page import parts, render
    from swath.store.models import utcnow

    with ctx.store.session() as s:
        sets = None if ctx.user.is_admin else set(s.scalars(web_repo.visible_set_ids(s, ctx.user)))
    sources, volume = count_rows(ctx.store, sets)  # the two lists that grow with the installation come in pages
    pages = {"sources": pager(ctx.request, "sources", sources, path="/status"),
             "volume": pager(ctx.request, "volume", volume, path="/status")}
    snap = gather(config=ctx.web.config, store=ctx.store, management_url=ctx.web.management_url, sets=sets,
                  window=Window(**{k: (p.offset, p.per_page) for k, p in pages.items()}))
    generated = utcnow().isoformat(timespec="seconds") + "Z"
    root = prefix.root(ctx.request)
    if ctx.request.url.path.endswith("/live.json"):
        return JSONResponse(parts(snap, generated=generated, pages=pages, root=root), headers=SECURITY_HEADERS)
    query = f"?{ctx.request.url.query}" if ctx.request.url.query else ""  # the live parts show the same pages
    return HTMLResponse(render(snap, generated=generated, every=LIVE_EVERY, pages=pages, root=root,
                               live_url=f"{root}/status/live.json{query}", reload_url=f"{root}/status{query}"),
                        headers=SECURITY_HEADERS)


ROUTES = [
    Route("/ops", operations, methods=["GET"]),
    Route("/ops/live.json", operations, methods=["GET"]),
    Route("/ops/deadletters/requeue", requeue, methods=["POST"]),
    Route("/status", status_page, methods=["GET"]),
    Route("/status/live.json", status_page, methods=["GET"]),
]
