"""Log in, log out, change one's password. The login form's CSRF token is a double-submit cookie (there is
no session yet); every other form carries its session's token (views.action)."""

from __future__ import annotations

import hmac
import secrets

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import web_repo
from swath.web import auth, kept_forms, prefix
from swath.web.views import Ctx, action, page, render

LOGIN_CSRF = "swath_login_csrf"


async def login_form(request: Request) -> Response:
    token = request.cookies.get(LOGIN_CSRF) or secrets.token_urlsafe(32)
    kept = request.cookies.get(kept_forms.COOKIE)  # a form sent after the session ended waits for this login
    root = prefix.root(request)
    response = render(request.app.state.web, "login.html", csrf=token, root=root,
                      next=_next(request.query_params.get("next"), root),
                      user=None, notice="Your session has ended: log in again and the form you sent comes back "
                      "with what you typed." if kept else None)
    response.set_cookie(LOGIN_CSRF, token, httponly=True, samesite="lax", secure=auth.secure(request),
                        path=root + "/login")
    return response


def _next(target: str | None, root: str) -> str:
    """Only a path of this site (with its prefix, as the page that sent here had it): never a redirect to another
    origin; else the home page."""
    return target if target and target.startswith("/") and not target.startswith("//") else root + "/"


async def login_post(request: Request) -> Response:
    from starlette.concurrency import run_in_threadpool

    web, root = request.app.state.web, prefix.root(request)
    form = await request.form(max_files=0, max_fields=10)
    cookie, sent = request.cookies.get(LOGIN_CSRF, ""), form.get("csrf")
    if not cookie or not isinstance(sent, str) or not hmac.compare_digest(cookie, sent):
        return render(web, "error.html", status=403, code=codes.WEB_CSRF, user=None, root=root,
                      message="the login form expired or came from another site; open the login page again")
    name, password = str(form.get("name", "")).strip(), str(form.get("password", ""))
    address = request.client.host if request.client else "-"
    try:
        done = await run_in_threadpool(auth.login, web.store, name=name, password=password, address=address)
    except SwathError as exc:
        status = 429 if exc.code in (codes.WEB_LOGIN_THROTTLED, codes.WEB_BUSY) else 401
        return render(web, "login.html", status=status, csrf=cookie, next=_next(str(form.get("next", "")), root),
                      error=exc.message, name=name, user=None, root=root)
    response = RedirectResponse(_next(str(form.get("next", "")), root), status_code=303)
    response.set_cookie(auth.COOKIE, done.token, max_age=int(auth.LIFETIME.total_seconds()), httponly=True,
                        samesite="lax", secure=auth.secure(request), path="/")
    response.delete_cookie(LOGIN_CSRF, path=root + "/login")
    return response


@action
def logout(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        web_repo.close_session(s, ctx.request.cookies.get(auth.COOKIE, ""))
    response = ctx.redirect("/login")
    response.delete_cookie(auth.COOKIE, path="/")
    return response


@page
def account(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        groups = [g.name for g in web_repo.groups_of(s, ctx.user)]
    return ctx.render("account.html", groups=groups)


@action
def change_password(ctx: Ctx) -> Response:
    if ctx.field("new") != ctx.field("again"):
        raise SwathError("the two new passwords differ", code=codes.BAD_REQUEST)
    auth.change_password(ctx.store, user_id=ctx.user.id, old=ctx.field("old"), new=ctx.field("new"),
                         keep_token=ctx.request.cookies.get(auth.COOKIE, ""))
    with ctx.store.session() as s:
        groups = [g.name for g in web_repo.groups_of(s, ctx.user)]
    return ctx.render("account.html", groups=groups, notice="password changed; your other sessions are logged out")


ROUTES = [
    Route("/login", login_form, methods=["GET"]),
    Route("/login", login_post, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    Route("/account", account, methods=["GET"]),
    Route("/account/password", change_password, methods=["POST"]),
]
