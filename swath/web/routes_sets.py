"""Collection sets: the list (home page), one set with its collections and history, create, deactivate."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.core.paths import safe_id
from swath.messages import codes
from swath.store import repo, web_repo
from swath.store.models import utcnow
from swath.store.web_models import Group
from swath.web.views import Ctx, action, page

RECENT_RUNS = 15


def _groups_for(ctx: Ctx, s: object) -> list:
    return web_repo.list_groups(s) if ctx.user.is_admin else web_repo.groups_of(s, ctx.user)  # type: ignore[arg-type]


@page
def home(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        sets = web_repo.list_sets(s, ctx.user)
        counts = {cs.id: len([c for c in web_repo.collections_of(s, cs.id) if c.deleted_at is None]) for cs in sets}
        groups = {g.id: g.name for g in web_repo.list_groups(s)}
        mine = _groups_for(ctx, s)
        visible = {cs.id for cs in sets}
        sources = {src.id: src for src in repo.list_sources(s, deleted=True)
                   if src.collection_set_id in visible}
        runs = [job for job in repo.list_jobs(s, limit=200) if job.source_id in sources][:RECENT_RUNS]
    return ctx.render("home.html", sets=sets, counts=counts, groups=groups, my_groups=mine, runs=runs,
                      sources=sources)


@action
def create_set(ctx: Ctx) -> Response:
    name = ctx.field("name")
    set_id = ctx.field("id") or safe_id(name.lower().replace(" ", "-"))
    if not name:
        raise SwathError("a collection set needs a name", code=codes.BAD_REQUEST)
    if safe_id(set_id) != set_id:
        raise SwathError(f"id {set_id!r}: use letters, digits, '.', '_' and '-' only (it becomes a folder name)",
                         code=codes.BAD_REQUEST)
    with ctx.store.session() as s:
        allowed = {g.id: g for g in _groups_for(ctx, s)}
        group = allowed.get(ctx.field("group"))
        if group is None:
            raise SwathError("choose one of your groups to own the collection set", code=codes.BAD_REQUEST)
        web_repo.add_set(s, set_id=set_id, name=name, description=ctx.field("description") or None, group=group)
        web_repo.log_change(s, set_id=set_id, source_id=None, user=ctx.user.name, action="created set",
                            detail=f"{name} (group {group.name})")
    return ctx.redirect(f"/sets/{set_id}")


@page
def show_set(ctx: Ctx) -> Response:
    set_id = ctx.request.path_params["set_id"]
    with ctx.store.session() as s:
        cs = web_repo.get_set(s, ctx.user, set_id)
        collections = web_repo.collections_of(s, cs.id)
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
