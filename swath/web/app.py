"""The web application: `create_app(config=, store=)` gives a Starlette app; `swath web` serves it with uvicorn.

Why Starlette: small, real routing and form parsing, sync endpoints run in a threadpool (the store is sync
SQLAlchemy), Jinja2 templates; Django would bring a second ORM and migrations beside SQLAlchemy + Alembic.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from pathlib import Path

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from swath.core.config import Config
from swath.requester import Requester
from swath.store import Store
from swath.web import (
    auth,
    routes_admin,
    routes_auth,
    routes_collections,
    routes_credentials,
    routes_delete,
    routes_exports,
    routes_notify,
    routes_ops,
    routes_preview,
    routes_rename,
    routes_runs,
    routes_sets,
    routes_stats,
)
from swath.web.limits import BodyLimit
from swath.web.state import Web
from swath.web.views import error_page

STATIC = Path(__file__).with_name("static")


def create_app(*, config: Config, store: Store, requester: Requester | None = None,
               secure_cookies: bool | None = None, management_url: str | None = None) -> Starlette:
    # env: references of stored sources are read from this process's environment, as the CLI's are
    requester = requester or Requester(config=config, store=store, env=dict(os.environ))
    web = Web(config=config, store=store, requester=requester, secure_cookies=secure_cookies,
              management_url=management_url)
    routes: list[BaseRoute] = [
        Route("/healthz", lambda _request: PlainTextResponse("ok\n")),
        *routes_auth.ROUTES, *routes_sets.ROUTES, *routes_collections.ROUTES, *routes_runs.ROUTES,
        *routes_exports.ROUTES, *routes_ops.ROUTES, *routes_admin.ROUTES, *routes_preview.ROUTES,
        *routes_stats.ROUTES, *routes_notify.ROUTES, *routes_credentials.ROUTES, *routes_rename.ROUTES,
        *routes_delete.ROUTES,
        Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
    ]
    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        yield
        requester.close()  # its publisher's connection

    auth.limit_hashing(slots=config.web_hash_slots, wait=config.web_hash_wait)
    # bodies capped before any endpoint reads them (swath/web/limits.py; docs/security.md)
    body_limit = Middleware(BodyLimit, small=config.web_login_max_bytes, form=config.web_form_max_bytes,
                            refuse=lambda status, code, message, root: error_page(web, status, code, message,
                                                                                  user=None, root=root))
    app = Starlette(routes=routes, lifespan=lifespan, middleware=[body_limit])
    app.state.web = web
    return app
