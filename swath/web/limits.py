"""Request bodies capped by route before anything reads them (docs/security.md "The web application"):
the login and logout forms are small, every other form has `web_form_max_bytes`. A Content-Length over the
cap is answered 413 web_too_large before a byte of the body is read; a chunked body is counted as it
arrives and refused the moment it passes the cap. Either way the connection is closed after the answer,
so the rest of the body is never taken in."""

from __future__ import annotations

from collections.abc import Callable

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from swath.messages import codes
from swath.web import prefix

SMALL_PATHS = frozenset({"/login", "/logout"})  # forms of a few short fields, posted without a session


class TooLarge(Exception):
    """The body passed its cap while the app was reading it (caught below, never seen by a client)."""


class BodyLimit:
    """ASGI middleware; `refuse(status, code, message, root)` gives the response sent for an oversized body
    (`root`: the prefix its links take, prefix.py)."""

    def __init__(self, app: ASGIApp, *, small: int, form: int,
                 refuse: Callable[[int, str, str, str], Response]) -> None:
        self.app, self.small, self.form, self.refuse = app, small, form, refuse

    def cap(self, path: str) -> int:
        return self.small if path in SMALL_PATHS else self.form

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        cap = self.cap(prefix.route(scope))  # /login under a prefix is still /login
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > cap):
            await self._too_large(scope, receive, send, cap)
            return
        received, started = 0, False

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > cap:
                raise TooLarge
            return message

        async def watched(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, watched)
        except TooLarge:
            if started:  # the app answered before reading on: nothing left to say
                return
            await self._too_large(scope, receive, send, cap)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, cap: int) -> None:
        response = self.refuse(413, codes.WEB_TOO_LARGE, f"this request is larger than {cap} bytes, the limit of "
                               "this page; send less (SWATH_WEB_FORM_MAX_BYTES sets the limit for forms)",
                               str(scope.get("root_path", "")))
        response.headers["Connection"] = "close"  # the unread rest of the body is dropped with the connection
        await response(scope, receive, send)
