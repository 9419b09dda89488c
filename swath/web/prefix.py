"""The path prefix the application is served under (ASGI root_path: `swath web` sets it from SWATH_WEB_URL's path;
the proxy in front passes /prefix/x on as /x). Routes, checks and kept paths use the path without it (`route`);
every link and redirect the browser follows carries it (`root`). A request's full path (request.url.path, a
Referer) carries it already."""

from __future__ import annotations

from starlette.requests import Request
from starlette.types import Scope


def root(request: Request) -> str:
    return str(request.scope.get("root_path", ""))


def route(scope: Scope) -> str:
    """The request's path within the application: '/status' for '/prefix/status'."""
    path, prefix = str(scope["path"]), str(scope.get("root_path", ""))
    if prefix and (path == prefix or path.startswith(prefix + "/")):
        return path[len(prefix):] or "/"
    return path


def route_of(request: Request) -> str:
    return route(request.scope)
