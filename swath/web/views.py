"""How a request becomes a page: the logged-in user, the CSRF check on every form, the templates and their
filters (human dates and sizes), and errors as pages (a hidden set's page is a 404, as a missing one is).

Endpoints are plain functions of a `Ctx`; `page` (GET) and `action` (POST) run them in Starlette's threadpool,
since the store is synchronous SQLAlchemy.
"""

from __future__ import annotations

import datetime as dt
import functools
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from swath.commands.common import stats_total
from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import web_repo
from swath.store.repo import NotFound
from swath.store.web_models import User, WebSession
from swath.web.auth import COOKIE

if TYPE_CHECKING:
    from swath.web.app import Web

Endpoint = Callable[["Ctx"], Response]
MAX_FIELDS = 500  # a form with more fields than this is not one of ours


def human_time(value: dt.datetime | str | None) -> str:
    """A stored time as 'YYYY-MM-DD HH:MM UTC', without microseconds; '-' when unset."""
    when = _parse(value)
    return when.strftime("%Y-%m-%d %H:%M UTC") if when else "-"


def ago(value: dt.datetime | str | None, now: dt.datetime | None = None) -> str:
    when = _parse(value)
    if when is None:
        return "-"
    seconds = int(((now or dt.datetime.now(dt.UTC).replace(tzinfo=None)) - when).total_seconds())
    if seconds < 0:
        return "in " + _span(-seconds)
    return "just now" if seconds < 10 else _span(seconds) + " ago"


def _span(seconds: int) -> str:
    for unit, size in (("day", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            n = seconds // size
            return f"{n} {unit}" + ("s" if unit == "day" and n > 1 else "")
    return f"{seconds} s"


def _parse(value: dt.datetime | str | None) -> dt.datetime | None:
    if not value:
        return None
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def human_size(n: int | None) -> str:
    size = float(n or 0)
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TB"


def environment() -> Environment:
    env = Environment(loader=PackageLoader("swath.web", "templates"), autoescape=select_autoescape(["html"]),
                      trim_blocks=True, lstrip_blocks=True)
    env.filters.update(when=human_time, ago=ago, size=human_size, totals=stats_total)
    return env


@dataclass
class Ctx:
    request: Request
    web: Web
    user: User
    session: WebSession
    form: FormData | None

    @property
    def store(self) -> Any:
        return self.web.store

    def field(self, name: str, default: str = "") -> str:
        value = self.form.get(name) if self.form is not None else None
        return value.strip() if isinstance(value, str) else default

    def render(self, template: str, status: int = 200, **values: Any) -> HTMLResponse:
        return render(self.web, template, status=status, user=self.user, csrf=self.session.csrf,
                      path=self.request.url.path, **values)

    def redirect(self, url: str) -> RedirectResponse:
        return RedirectResponse(url, status_code=303)


def render(web: Web, template: str, *, status: int = 200, **values: Any) -> HTMLResponse:
    html = web.templates.get_template(template).render(**{"path": "", "notice": None, **values})
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


# no framing (clickjacking), no sniffing, no referrer leaking ids to other sites; scripts only from here
SECURITY_HEADERS = {"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
                    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
                    "Cache-Control": "no-store"}


def page(fn: Endpoint) -> Callable[[Request], Any]:
    """A GET endpoint for a logged-in user."""

    @functools.wraps(fn)
    async def endpoint(request: Request) -> Response:
        return await run_in_threadpool(_run, fn, request, None)

    return endpoint


def action(fn: Endpoint) -> Callable[[Request], Any]:
    """A POST endpoint for a logged-in user; refused unless the form carries the session's CSRF token."""

    @functools.wraps(fn)
    async def endpoint(request: Request) -> Response:
        form = await request.form(max_files=0, max_fields=MAX_FIELDS)
        return await run_in_threadpool(_run, fn, request, form)

    return endpoint


def _run(fn: Endpoint, request: Request, form: FormData | None) -> Response:
    web: Web = request.app.state.web
    token = request.cookies.get(COOKIE, "")
    found = None
    if token:
        with web.store.session() as s:
            found = web_repo.session_user(s, token)
    if found is None:
        if form is not None:  # a post from a page whose session ended: say so rather than redirect
            return error_page(web, 403, codes.WEB_CSRF, "your session has ended; log in again")
        return RedirectResponse("/login?next=" + quote(request.url.path), status_code=303)
    session, user = found
    if form is not None:
        sent = form.get("csrf")
        if not isinstance(sent, str) or not hmac.compare_digest(sent, session.csrf):
            return error_page(web, 403, codes.WEB_CSRF, "this form is not from a page of this session; reload the "
                              "page and send it again", user=user, csrf=session.csrf)
    ctx = Ctx(request=request, web=web, user=user, session=session, form=form)
    try:
        return fn(ctx)
    except NotFound as exc:
        return error_page(web, 404, codes.WEB_NOT_FOUND, exc.message, user=user, csrf=session.csrf)
    except SwathError as exc:
        return error_page(web, 400, exc.code, exc.message, user=user, csrf=session.csrf)


def error_page(web: Web, status: int, code: str, message: str, **values: Any) -> HTMLResponse:
    return render(web, "error.html", status=status, code=code, message=message, **values)


def admin_only(ctx: Ctx) -> None:
    if not ctx.user.is_admin:
        raise NotFound("no such page")  # as for a page that does not exist
