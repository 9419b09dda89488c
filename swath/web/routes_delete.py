"""Deleting exports, collections and collection sets (SFM #1134), by their group's managers: any member of the
owning group (the store has no manager role; membership is what lets one see and change them), and admins.
A page asks first, naming what happens to the WARCs: kept SWATH_PURGE_AFTER_DAYS days, then purged by the
retention expiry; or, by an admin, purged now. Purging is swath/purge.py, the code `swath harvest purge` runs."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import func, select
from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.purge import Purged, exports_of, mark_deleted, purge_sources, remove_export, retention_end
from swath.store import repo, web_repo
from swath.store.models import ACTIVE_STATES, Export, Source, Warc, utcnow
from swath.web import prefix
from swath.web.routes_exports import files_of
from swath.web.views import Ctx, action, admin_only


def _warcs(s: object, sources: Iterable[Source]) -> tuple[int, int]:
    """(WARCs, bytes) the WARC index holds for these collections."""
    count = size = 0
    for src in sources:
        n, total = s.execute(select(func.count(), func.sum(Warc.bytes)).where(  # type: ignore[attr-defined]
            Warc.collection_set_id == src.collection_set_id, Warc.collection_id == src.collection_id)).one()
        count, size = count + int(n), size + int(total or 0)
    return count, size


def _ask(ctx: Ctx, *, title: str, consequence: str, sources: list[Source], exports: int,
         back: str) -> Response | None:
    """None when confirmed; else the page naming the consequence and what happens to the WARCs."""
    if ctx.field("confirm") == "yes":
        return None
    with ctx.store.session() as s:
        warcs, size = _warcs(s, sources)
    days = ctx.web.config.purge_after_days
    fate = (f"Its {warcs} WARC file(s) ({size:,} bytes) and {exports} export(s) are kept for {days} day(s), "
            f"until {retention_end(ctx.web.config):%Y-%m-%d %H:%M} UTC, then purged for good: files, WARC index "
            "entries and export files. Until then an administrator can still recover them on the command line.")
    return ctx.render("delete_confirm.html", title=title, consequence=consequence, warcs=warcs, warcs_fate=fate,
                      button="Delete", back=back, action=prefix.route_of(ctx.request), purge_now=ctx.user.is_admin)


def _refuse_running(s: object, sources: Iterable[Source]) -> None:
    busy = [src.name for src in sources if repo.active_job(s, src.id) is not None]  # type: ignore[arg-type]
    if busy:
        raise SwathError(f"a harvest of {busy[0]} is queued or running; stop or cancel it, then delete",
                         code=codes.WEB_STILL_RUNNING)


def _delete(ctx: Ctx, *, set_id: str, source_ids: list[str], what: str) -> str:
    """Mark deleted (retained), log it; purge now when an admin asked. The flash message for the next page."""
    purge_now = ctx.field("purge") == "now"
    if purge_now:
        admin_only(ctx)
    until = retention_end(ctx.web.config)
    with ctx.store.session() as s:
        for source_id in source_ids:
            mark_deleted(s, s.get_one(Source, source_id), purge_after=until)
        web_repo.log_change(s, set_id=set_id, source_id=source_ids[0] if len(source_ids) == 1 else None,
                            user=ctx.user.name, action=f"deleted {what}",
                            detail="purged now" if purge_now else f"WARCs kept until {until:%Y-%m-%d %H:%M} UTC")
    if not purge_now:
        return f"Deleted {what}; its WARCs are kept until {until:%Y-%m-%d} and then purged."
    with ctx.store.session() as s:
        done = purge_sources(s, ctx.web.config, ids=source_ids)
        web_repo.log_change(s, set_id=set_id, source_id=None, user=ctx.user.name, action=f"purged {what}",
                            detail=done.text())
    return _purged_text(what, done)


def _purged_text(what: str, done: Purged) -> str:
    skipped = f" {len(done.skipped)} path(s) were left alone (a link, or outside the data root or the object store)." \
        if done.skipped else ""
    return (f"Purged {what}: {done.warcs} WARC file(s) and {done.exports} export(s) removed, "
            f"{done.bytes_freed:,} bytes freed.{skipped}")


@action
def delete_collection(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        src, cs = web_repo.get_collection(s, ctx.user, ctx.request.path_params["source_id"])
        _refuse_running(s, [src])
        exports = len(exports_of(s, src))
    ask = _ask(ctx, title=f"Delete {src.name}?", sources=[src], exports=exports, back=f"/collections/{src.id}",
               consequence="It goes from the lists at once: no harvest of it starts again and it cannot be "
               "reactivated (to pause a collection, deactivate it instead).")
    if ask is not None:
        return ask
    flash = _delete(ctx, set_id=src.collection_set_id, source_ids=[src.id], what=f"collection {src.name}")
    return ctx.redirect(f"/sets/{cs.id}" if cs is not None else "/", flash=flash)


@action
def delete_set(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        cs = web_repo.get_set(s, ctx.user, ctx.request.path_params["set_id"])
        sources = [c for c in web_repo.collections_of(s, cs.id) if c.purge_after is None]
        _refuse_running(s, sources)
        exports = sum(len(exports_of(s, src)) for src in sources)
    ask = _ask(ctx, title=f"Delete {cs.name}?", sources=sources, exports=exports, back=f"/sets/{cs.id}",
               consequence=f"The set and its {len(sources)} collection(s) go from the lists at once; no harvest "
               "of them starts again (to pause a set, deactivate it instead).")
    if ask is not None:
        return ask
    with ctx.store.session() as s:
        row = web_repo.get_set(s, ctx.user, cs.id)
        row.purge_after = retention_end(ctx.web.config)
        row.deactivated_at = row.deactivated_at or utcnow()
    flash = _delete(ctx, set_id=cs.id, source_ids=[src.id for src in sources], what=f"set {cs.name}") \
        if sources else f"Deleted set {cs.name}."
    return ctx.redirect("/", flash=flash)


@action
def delete_export(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        export, request = web_repo.export_request(s, ctx.user, ctx.request.path_params["export_id"])
    if export.status in ACTIVE_STATES:
        raise SwathError("this export is still running; wait until it ends, then delete it",
                         code=codes.WEB_STILL_RUNNING)
    files = files_of(ctx, export)
    if ctx.field("confirm") != "yes":
        return ctx.render("delete_confirm.html", title=f"Delete export {export.id}?", warcs=None,
                          consequence=f"Its {len(files)} file(s) ({sum(n for _f, n in files):,} bytes) are removed "
                          "now, for good. The collection's WARCs are not touched: it can be exported again.",
                          button="Delete", back=f"/exports/{export.id}", action=prefix.route_of(ctx.request),
                          purge_now=False)
    done = Purged()
    with ctx.store.session() as s:
        remove_export(s, ctx.web.config, s.get_one(Export, export.id), done)
        web_repo.log_change(s, set_id=request.collection_set_id, source_id=request.source_id, user=ctx.user.name,
                            action="deleted export", detail=f"{export.export_type} {export.format} ({export.id}), "
                            f"{done.bytes_freed:,} bytes freed")
    return ctx.redirect("/exports", flash=f"Deleted export {export.id}: {done.bytes_freed:,} bytes freed.")


ROUTES = [
    Route("/collections/{source_id}/delete", delete_collection, methods=["POST"]),
    Route("/sets/{set_id}/delete", delete_set, methods=["POST"]),
    Route("/exports/{export_id}/delete", delete_export, methods=["POST"]),
]
