"""Accounts (admins): users, groups and memberships."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from swath.store import web_repo
from swath.store.models import utcnow
from swath.store.web_models import User
from swath.web import auth
from swath.web.views import Ctx, action, admin_only, page


@page
def accounts(ctx: Ctx) -> Response:
    admin_only(ctx)
    with ctx.store.session() as s:
        users = web_repo.list_users(s)
        groups = web_repo.list_groups(s)
        members = web_repo.members(s)
    return ctx.render("admin.html", users=users, groups=groups, members=members,
                      notice=ctx.request.query_params.get("notice"))


@action
def add_user(ctx: Ctx) -> Response:
    admin_only(ctx)
    groups = [g for g in (ctx.form.getlist("groups") if ctx.form else []) if isinstance(g, str) and g]
    user = auth.add_user(ctx.store, name=ctx.field("name"), password=ctx.field("password"),
                         is_admin=ctx.field("is_admin") == "on", groups=groups)
    return ctx.redirect(f"/admin?notice=user {user.name} added")


@action
def add_group(ctx: Ctx) -> Response:
    admin_only(ctx)
    with ctx.store.session() as s:
        group = web_repo.group_named(s, ctx.field("name") or "-", create=True)
        user = web_repo.user_named(s, ctx.field("member")) if ctx.field("member") else None
        if user is not None:
            web_repo.join(s, user, group)
    return ctx.redirect(f"/admin?notice=group {group.name} saved")


@action
def disable_user(ctx: Ctx) -> Response:
    admin_only(ctx)
    with ctx.store.session() as s:
        user = s.get(User, ctx.field("user"))
        if user is not None and user.id != ctx.user.id:
            user.disabled_at = None if user.disabled_at else utcnow()
            web_repo.close_sessions_of(s, user)
    return ctx.redirect("/admin")


ROUTES = [
    Route("/admin", accounts, methods=["GET"]),
    Route("/admin/users", add_user, methods=["POST"]),
    Route("/admin/groups", add_group, methods=["POST"]),
    Route("/admin/users/disable", disable_user, methods=["POST"]),
]
