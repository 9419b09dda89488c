"""Collection sets: the list (home page), one set with its collections and history, create, deactivate."""

from __future__ import annotations

import functools

from sqlalchemy.orm import Session
from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import repo, web_repo
from swath.store.models import utcnow
from swath.store.web_models import Group
from swath.web import fields
from swath.web.paging import pager
from swath.web.views import Ctx, action, page

RECENT_RUNS = 15


def _groups_for(ctx: Ctx, s: Session) -> list[Group]:
    return web_repo.list_groups(s) if ctx.user.is_admin else web_repo.groups_of(s, ctx.user)


@page
def home(ctx: Ctx) -> Response:
    return _home(ctx)


def _home(ctx: Ctx, *, set_error: str | None = None) -> Response:
    """The list of sets; with `set_error`, the new-set form refused, shown again with what was typed."""
    with ctx.store.session() as s:
        pages = pager(ctx.request, "page", web_repo.count_sets(s, ctx.user))
        sets = web_repo.list_sets(s, ctx.user, offset=pages.offset, limit=pages.per_page)
        counts = web_repo.active_counts(s, [cs.id for cs in sets])
        groups = {g.id: g.name for g in web_repo.list_groups(s)}
        mine = _groups_for(ctx, s)
        recent = web_repo.recent_runs(s, web_repo.visible_set_ids(s, ctx.user), RECENT_RUNS)
        runs, sources = [job for job, _src in recent], {src.id: src for _job, src in recent}
        # an admin also sees the sources made on the command line, in no collection set of the web
        loose = web_repo.command_line_sources(s) if ctx.user.is_admin else []
    typed = {k: ctx.field(k) for k in ("name", "id", "group", "description")} if set_error else {}
    return ctx.render("home.html", status=400 if set_error else 200, sets=sets, pages=pages, counts=counts,
                      groups=groups, my_groups=mine, runs=runs, sources=sources, set_error=set_error, typed=typed,
                      loose=loose)


@action
def create_set(ctx: Ctx) -> Response:
    try:
        set_id, name = _new_set(ctx)
    except SwathError as exc:
        return _home(ctx, set_error=exc.message)
    return ctx.redirect(f"/sets/{set_id}")


def _new_set(ctx: Ctx) -> tuple[str, str]:
    """A set from the form: any name (unique in its group), its folder typed or made from the name (unique)."""
    name, typed = fields.name(ctx.field("name")), ctx.field("id")
    with ctx.store.session() as s:
        allowed = {g.id: g for g in _groups_for(ctx, s)}
        group = allowed.get(ctx.field("group"))
        if group is None:
            raise SwathError("Group: choose one of your groups to own the collection set", code=codes.BAD_REQUEST)
        if web_repo.set_name_taken(s, group.id, name):
            raise SwathError(f"Name: group {group.name} has a collection set named {name!r} already",
                             code=codes.BAD_REQUEST)
        taken = functools.partial(web_repo.set_folder_taken, s)
        if typed and taken(fields.folder(typed)):  # a folder of another group is not named: only that it is used
            raise SwathError(f"Folder name: {typed!r} is used already; choose another or leave it empty",
                             code=codes.BAD_REQUEST)
        set_id = typed or fields.free_folder(fields.folder_from(name) or "set", taken)
        web_repo.add_set(s, set_id=set_id, name=name, description=ctx.field("description") or None, group=group)
        web_repo.log_change(s, set_id=set_id, source_id=None, user=ctx.user.name, action="created set",
                            detail=f"{name} (group {group.name})")
    return set_id, name


@page
def show_set(ctx: Ctx) -> Response:
    set_id = ctx.request.path_params["set_id"]
    with ctx.store.session() as s:
        cs = web_repo.get_set(s, ctx.user, set_id)
        collections = [c for c in web_repo.collections_of(s, cs.id) if c.purge_after is None]  # deleted: gone
        active = {c.id: repo.active_job(s, c.id) for c in collections}
        history = web_repo.changes(s, set_id=cs.id)
        group = s.get(Group, cs.group_id)
    from swath.web.forms import harvest_types

    return ctx.render("set.html", cs=cs, collections=collections, active=active, history=history,
                      group=group, types=harvest_types(), names={c.id: c.name for c in collections})


@action
def toggle_set(ctx: Ctx) -> Response:
    set_id = ctx.request.path_params["set_id"]
    with ctx.store.session() as s:
        cs = web_repo.get_set(s, ctx.user, set_id)
        if not cs.deactivated_at:
            ask = ctx.confirmed(title=f"Deactivate {cs.name}?", button="Deactivate", back=f"/sets/{set_id}",
                                consequence="No new collection can be made in it; its collections, their runs, "
                                "WARCs and exports stay as they are. It can be reactivated from its page.")
            if ask is not None:
                return ask
        cs.deactivated_at = None if cs.deactivated_at else utcnow()
        web_repo.log_change(s, set_id=cs.id, source_id=None, user=ctx.user.name,
                            action="deactivated set" if cs.deactivated_at else "reactivated set")
    return ctx.redirect(f"/sets/{set_id}")


ROUTES = [
    Route("/", home, methods=["GET"]),
    Route("/sets", create_set, methods=["POST"]),
    Route("/sets/{set_id}", show_set, methods=["GET"]),
    Route("/sets/{set_id}/active", toggle_set, methods=["POST"]),
]
