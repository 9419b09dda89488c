"""Accounts (admins): users, groups and memberships; one user's page to reset their password or change their
groups and admin role (either ends their sessions, so the change holds at their next request)."""

from __future__ import annotations

from sqlalchemy.orm import Session
from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import web_repo
from swath.store.models import utcnow
from swath.store.repo import NotFound
from swath.store.web_models import User
from swath.web import auth, fields
from swath.web.views import Ctx, action, admin_only, page


@page
def accounts(ctx: Ctx) -> Response:
    admin_only(ctx)
    with ctx.store.session() as s:
        users = web_repo.list_users(s)
        groups = web_repo.list_groups(s)
        members = web_repo.members(s)
    return ctx.render("admin.html", users=users, groups=groups, members=members)


@action
def add_user(ctx: Ctx) -> Response:
    admin_only(ctx)
    groups = [g for g in (ctx.form.getlist("groups") if ctx.form else []) if isinstance(g, str) and g]
    user = auth.add_user(ctx.store, name=ctx.field("name"), password=ctx.field("password"),
                         is_admin=ctx.field("is_admin") == "on", groups=groups)
    return ctx.redirect("/admin", flash=f"user {user.name} added")


@action
def add_group(ctx: Ctx) -> Response:
    admin_only(ctx)
    name, member = fields.name(ctx.field("name"), label="Group name"), ctx.field("member")
    with ctx.store.session() as s:
        user = web_repo.user_named(s, member) if member else None
        if member and user is None:  # said, not ignored: the admin meant someone
            raise SwathError(f"Add user: no (enabled) user is named {member[:100]!r}; the group was not saved",
                             code=codes.BAD_REQUEST)
        group = web_repo.group_named(s, name, create=True)
        if user is not None:
            web_repo.join(s, user, group)
    return ctx.redirect("/admin", flash=f"group {group.name} saved")


@action
def disable_user(ctx: Ctx) -> Response:
    admin_only(ctx)
    with ctx.store.session() as s:
        user = s.get(User, ctx.field("user"))
        if user is not None and user.id != ctx.user.id:
            user.disabled_at = None if user.disabled_at else utcnow()
            web_repo.close_sessions_of(s, user)
    return ctx.redirect("/admin")


def _other_user(ctx: Ctx) -> str:
    """The user id of the page; an admin's own account is changed on Your account (no locking oneself out)."""
    user_id: str = ctx.request.path_params["user_id"]
    if user_id == ctx.user.id:
        raise SwathError("change your own password on Your account; another admin changes your role",
                         code=codes.BAD_REQUEST)
    return user_id


def _user(s: Session, user_id: str) -> User:
    other: User | None = s.get(User, user_id)
    if other is None:
        raise NotFound(f"no user {user_id!r}")
    return other


@page
def show_user(ctx: Ctx) -> Response:
    admin_only(ctx)
    user_id = _other_user(ctx)
    with ctx.store.session() as s:
        other = _user(s, user_id)
        mine = {g.id for g in web_repo.groups_of(s, other)}
        groups = web_repo.list_groups(s)
    return ctx.render("admin_user.html", other=other, groups=groups, mine=mine)


@action
def reset_password(ctx: Ctx) -> Response:
    admin_only(ctx)
    other = auth.reset_password(ctx.store, user_id=_other_user(ctx), new=ctx.field("password"))
    return ctx.redirect(f"/admin/users/{other.id}", flash=f"password of {other.name} reset; their sessions ended")


@action
def set_access(ctx: Ctx) -> Response:
    admin_only(ctx)
    user_id = _other_user(ctx)
    wanted = {g for g in (ctx.form.getlist("groups") if ctx.form else []) if isinstance(g, str)}
    with ctx.store.session() as s:
        other = _user(s, user_id)
        other.is_admin = ctx.field("is_admin") == "on"
        web_repo.set_groups(s, other, wanted)
        web_repo.close_sessions_of(s, other)
        name = other.name
    return ctx.redirect(f"/admin/users/{user_id}", flash=f"groups and role of {name} saved; their sessions ended")


ROUTES = [
    Route("/admin", accounts, methods=["GET"]),
    Route("/admin/users", add_user, methods=["POST"]),
    Route("/admin/groups", add_group, methods=["POST"]),
    Route("/admin/users/disable", disable_user, methods=["POST"]),
    Route("/admin/users/{user_id}", show_user, methods=["GET"]),
    Route("/admin/users/{user_id}/password", reset_password, methods=["POST"]),
    Route("/admin/users/{user_id}/access", set_access, methods=["POST"]),
]
