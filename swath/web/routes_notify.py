"""Your account > Notifications: the e-mail address and the events (a harvest fails, a stream stops, an export is
ready) a member chooses to be told of; swath/notify.py sends them from the monitor."""

from __future__ import annotations

import re

from starlette.responses import Response
from starlette.routing import Route

from swath.messages import codes
from swath.store import notify_repo
from swath.store.notify_models import EVENT_KINDS, EXPORT_READY, HARVEST_FAILED, STREAM_STOPPED
from swath.web.views import Ctx, action, page

# one address, name@host: no display name, list, spaces or line breaks (it becomes the To header)
EMAIL = re.compile(r"[^@\s<>,;\"()\[\]\\]+@[^@\s<>,;\"()\[\]\\]+\.[^@\s<>,;\"()\[\]\\.]+")
LABELS = {HARVEST_FAILED: "A harvest of my group's collections fails",
          STREAM_STOPPED: "A stream harvest of my group's collections stops",
          EXPORT_READY: "An export of my group's collections is ready"}


@page
def show(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        row = notify_repo.settings_of(s, ctx.user.id)
        chosen = {kind for kind in EVENT_KINDS if getattr(row, kind)}
        email = row.email
    saved = ctx.request.query_params.get("saved") == "1"  # a flag only: no text from the URL is shown
    return ctx.render("notifications.html", email=email, chosen=chosen, labels=LABELS, saved=saved,
                      mail_on=bool(ctx.web.config.smtp_url))


@action
def save(ctx: Ctx) -> Response:
    email = ctx.field("email")
    chosen = {kind for kind in EVENT_KINDS if ctx.field(kind) == "on"}
    if (email or chosen) and (len(email) > 254 or not EMAIL.fullmatch(email)):
        return ctx.render("notifications.html", status=400, email=email, chosen=chosen, labels=LABELS, saved=False,
                          mail_on=bool(ctx.web.config.smtp_url), code=codes.EMAIL_INVALID,
                          error="Enter one e-mail address, such as archivist@example.org, to be sent these.")
    with ctx.store.session() as s:
        notify_repo.save_settings(s, ctx.user.id, email=email, kinds=chosen)
    return ctx.redirect("/account/notifications?saved=1")


ROUTES = [
    Route("/account/notifications", show, methods=["GET"]),
    Route("/account/notifications", save, methods=["POST"]),
]
