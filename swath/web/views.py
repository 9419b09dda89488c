"""How a request becomes a page: the logged-in user, the CSRF check on every form, rendering (templating.py)
with security headers, and errors as pages (a hidden set's page is a 404, as a missing one is).

Endpoints are plain functions of a `Ctx`; `page` (GET) and `action` (POST) run them in Starlette's threadpool,
since the store is synchronous SQLAlchemy.
"""

from __future__ import annotations

import functools
import hmac
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import Store, web_repo
from swath.store.repo import NotFound
from swath.store.web_models import User, WebSession
from swath.web import kept_forms, prefix
from swath.web.advice import back_to, for_browser
from swath.web.auth import COOKIE
from swath.web.state import Web

Endpoint = Callable[["Ctx"], Response]
MAX_FIELDS = 500  # a form with more fields than this is not one of ours


@dataclass
class Ctx:
    request: Request
    web: Web
    user: User
    session: WebSession
    form: FormData | None
    kept_form: kept_forms.KeptForm | None = None  # a form sent after its session ended, to fill in again (kept_forms)

    @property
    def store(self) -> Store:
        return self.web.store

    def field(self, name: str, default: str = "") -> str:
        value = self.form.get(name) if self.form is not None else None
        return value.strip() if isinstance(value, str) else default

    def render(self, template: str, status: int = 200, **values: object) -> HTMLResponse:
        if "notice" not in values and self.session.flash:  # the message of the change that led here
            with self.store.session() as s:
                values["notice"] = web_repo.take_flash(s, self.session)
        if self.kept_form is not None:
            values.setdefault("notice", kept_forms.NOTICE)
            values["kept_form"] = {"action": self.kept_form["action"], "fields": self.kept_form["fields"]}
        return render(self.web, template, status=status, user=self.user, csrf=self.session.csrf,
                      path=prefix.route_of(self.request), root=prefix.root(self.request), **values)

    def confirmed(self, *, title: str, consequence: str, button: str, back: str) -> HTMLResponse | None:
        """None when the form says it was confirmed; else the page that asks, naming the consequence, whose
        button posts the same form again confirmed."""
        if self.field("confirm") == "yes":
            return None
        return self.render("confirm.html", title=title, consequence=consequence, button=button, back=back,
                           action=prefix.route_of(self.request))

    def redirect(self, url: str, flash: str | None = None) -> RedirectResponse:
        """To `url`, whose page says `flash` (kept in the session: a URL never carries a page's message)."""
        if flash:
            with self.store.session() as s:
                web_repo.set_flash(s, self.session, flash)
        return RedirectResponse(prefix.root(self.request) + url if url.startswith("/") else url, status_code=303)


def render(web: Web, template: str, *, status: int = 200, **values: object) -> HTMLResponse:
    # root: the prefix every link of the page starts with (prefix.py); values from a request give it
    html = web.templates.get_template(template).render(**{"path": "", "notice": None, "root": "", **values})
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


# no framing (clickjacking), no sniffing, no referrer leaking ids to other sites; scripts only from here
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
                    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
                    "Cache-Control": "no-store"}


def page(fn: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    """A GET endpoint for a logged-in user."""

    @functools.wraps(fn)
    async def endpoint(request: Request) -> Response:
        found = await run_in_threadpool(_session_of, request)
        if found is None:
            return RedirectResponse(prefix.root(request) + "/login?next=" + quote(request.url.path), status_code=303)
        kept = kept_forms.take(request)  # the form this page had when its session ended, if any
        response = await run_in_threadpool(_run, fn, request, None, found, kept)
        if kept is not None:
            response.delete_cookie(kept_forms.COOKIE, path="/")  # given once
        return response

    return endpoint


def action(fn: Endpoint) -> Callable[[Request], Awaitable[Response]]:
    """A POST endpoint for a logged-in user; refused unless the form carries the session's CSRF token. The
    session is checked before the form is read: a post without one is answered unread, unless it came from a
    page of this site (its form is kept while the user logs in again: kept_forms.py)."""

    @functools.wraps(fn)
    async def endpoint(request: Request) -> Response:
        found = await run_in_threadpool(_session_of, request)
        back = kept_forms.page_sent_from(request) if found is None and kept_forms.keepable(request) else None
        if back is not None:
            return await kept_forms.keep(request, back, max_fields=MAX_FIELDS)
        if found is None:  # a post whose session ended, from elsewhere: say so rather than redirect
            response = error_page(request.app.state.web, 403, codes.WEB_CSRF, "your session has ended; log in again",
                                  root=prefix.root(request))
            response.headers["Connection"] = "close"  # the unread body goes with the connection
            return response
        form = await request.form(max_files=0, max_fields=MAX_FIELDS)
        return await run_in_threadpool(_run, fn, request, form, found)

    return endpoint


def _session_of(request: Request) -> tuple[WebSession, User] | None:
    token = request.cookies.get(COOKIE, "")
    if not token:
        return None
    with request.app.state.web.store.session() as s:
        return web_repo.session_user(s, token)


def _run(fn: Endpoint, request: Request, form: FormData | None, found: tuple[WebSession, User],
         kept: kept_forms.KeptForm | None = None) -> Response:
    web: Web = request.app.state.web
    session, user = found
    if form is not None:
        sent = form.get("csrf")
        if not isinstance(sent, str) or not hmac.compare_digest(sent, session.csrf):
            return error_page(web, 403, codes.WEB_CSRF, "this form is not from a page of this session; reload the "
                              "page and send it again", user=user, csrf=session.csrf, root=prefix.root(request))
    ctx = Ctx(request=request, web=web, user=user, session=session, form=form, kept_form=kept)
    try:
        return fn(ctx)
    except NotFound as exc:
        return error_page(web, 404, codes.WEB_NOT_FOUND, exc.message, user=user, csrf=session.csrf,
                          root=prefix.root(request))
    except SwathError as exc:  # busy (every slot taken) is 429, as a throttled login is
        return error_page(web, 429 if exc.code == codes.WEB_BUSY else 400, exc.code, exc.message, user=user,
                          csrf=session.csrf, back=back_to(request), root=prefix.root(request))


def error_page(web: Web, status: int, code: str, message: str, **values: object) -> HTMLResponse:
    """An error as a page: the message without command-line advice, a way on in the browser (`back`)."""
    return render(web, "error.html", status=status, code=code, message=for_browser(message), **values)


def admin_only(ctx: Ctx) -> None:
    if not ctx.user.is_admin:
        raise NotFound("no such page")  # as for a page that does not exist
