"""A form sent after its session ended is not lost: its fields (never passwords, credential values, the CSRF
token or a confirmation) are kept in the web process under a random token in a short-lived cookie, the user
logs in, and the page the form was on shows it filled in again (static/restore.js). Only a form sent from a
page of this site is kept (its Origin and Referer), so another site cannot plant values in someone's form;
forms that are all about secrets (passwords, credentials) are not kept at all."""

from __future__ import annotations

import re
from typing import TypedDict
from urllib.parse import quote, urlsplit

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from swath.web import prefix
from swath.web.auth import secure
from swath.web.kept import Kept

COOKIE = "swath_form"
SECONDS = 30 * 60  # a form kept longer than this is dropped: log in within half an hour
SIZE = 100  # forms kept at once; the oldest go first
MAX_CHARS = 64 * 1024  # a bigger form (a paste of thousands of seeds) is not kept: at most ~6.5 M characters in all
SECRET_FIELD = re.compile(r"^(csrf|confirm|password|old|new|again)$|^cred\.")  # never kept
NOT_KEPT = re.compile(r"^/(logout|account/password|admin/users(/[^/]+/password)?|credentials(/.*)?)$")
NOTICE = ("Your session had ended, so the form you sent was not saved. You are logged in again and it is "
          "filled in with what you typed (passwords and credential values excepted): check it and send it again.")


class KeptForm(TypedDict):
    page: str  # the path (and query) of the page the form was sent from
    action: str  # where it was sent
    fields: list[tuple[str, str]]  # its fields, secrets left out


def store() -> Kept[KeptForm]:
    return Kept(size=SIZE, seconds=SECONDS)


def page_sent_from(request: Request) -> str | None:
    """The path (and query) of the page of this site the form was sent from; None when its Origin or Referer
    names another site, or there is none."""
    here = request.url.netloc
    origin, referer = request.headers.get("origin"), request.headers.get("referer")
    if not referer or (origin and urlsplit(origin).netloc != here):
        return None
    parts = urlsplit(referer)
    if parts.netloc != here or not parts.path.startswith("/") or parts.path.startswith("//"):
        return None
    return parts.path + (f"?{parts.query}" if parts.query else "")


async def keep(request: Request, back: str, *, max_fields: int) -> Response:
    """Keep the form's fields, then send the user to log in and back to `back`."""
    form = await request.form(max_files=0, max_fields=max_fields)  # within the body limit (limits.py)
    fields = [(k, v) for k, v in form.multi_items() if isinstance(v, str) and not SECRET_FIELD.match(k)]
    response = RedirectResponse(prefix.root(request) + "/login?next=" + quote(back, safe="/?=&"), status_code=303)
    if sum(len(k) + len(v) for k, v in fields) <= MAX_CHARS:
        token = request.app.state.web.kept_forms.put({"page": back, "action": request.url.path, "fields": fields})
        response.set_cookie(COOKIE, token, max_age=SECONDS, httponly=True, samesite="lax", secure=secure(request),
                            path="/")
    return response


def keepable(request: Request) -> bool:
    return not NOT_KEPT.match(prefix.route_of(request))


def take(request: Request) -> KeptForm | None:
    """The form kept for this page (its path and query), given once; None when there is none."""
    token = request.cookies.get(COOKIE)
    if not token:
        return None
    kept: Kept[KeptForm] = request.app.state.web.kept_forms
    found = kept.get(token)
    here = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    if found is None or found["page"] != here:
        return None
    return kept.take(token)
