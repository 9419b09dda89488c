"""Small pieces shared by the social platform harvesters (Twitter, Flickr, Tumblr)."""

from __future__ import annotations

from collections.abc import Mapping

import requests
from requests.adapters import HTTPAdapter

from swath.core.encodings import ACCEPT_ENCODING
from swath.harvesters.errors import HarvestError
from swath.harvesters.guard import guard_session
from swath.messages import codes


class MissingCredentials(HarvestError):
    code = codes.BAD_REQUEST  # the start message lacks the credentials this platform needs


class LibraryAdapter(HTTPAdapter):
    """Hands a client library's requests to the recording adapter (`inner`), sending those for its
    hard-coded API root (`default`) to the configured one (`base`), so twarc and flickrapi need no
    patching. Header values some auth helpers leave as bytes (requests_oauthlib) are made text first."""

    def __init__(self, *, inner: HTTPAdapter, default: str = "", base: str = "") -> None:
        super().__init__()
        self.inner = inner
        self.default = default.rstrip("/")
        self.base = base.rstrip("/")

    def send(self, request: requests.PreparedRequest, stream: bool = False,
             timeout: float | tuple[float | None, float | None] | None = None, verify: bool | str = True,
             cert: str | tuple[str, str] | None = None, proxies: dict[str, str] | None = None) -> requests.Response:
        url = request.url or ""
        if self.default and self.base != self.default and url.startswith(self.default + "/"):
            request.url = self.base + url[len(self.default):]
        for name, value in list(request.headers.items()):
            if isinstance(value, bytes):
                request.headers[name] = value.decode("latin-1")
        return self.inner.send(request, stream=stream, timeout=timeout, verify=verify, cert=cert, proxies=proxies)

    def close(self) -> None:
        self.inner.close()


def mount_recording(session: requests.Session, *, adapter: HTTPAdapter, default: str, base: str) -> None:
    """Route every request of a client library's session through the recording adapter, with the
    library's API root (`default`) replaced by `base`, under the engine's redirect and cookie policy."""
    guard_session(session)
    session.headers["Accept-Encoding"] = ACCEPT_ENCODING  # only codings the WARC readers undo
    wrapped = LibraryAdapter(inner=adapter, default=default, base=base)
    session.mount("https://", wrapped)
    session.mount("http://", wrapped)


def credential(credentials: Mapping[str, object], *names: str) -> list[str]:
    """The named credentials as strings, or MissingCredentials naming the ones absent (never their values)."""
    missing = [n for n in names if not credentials.get(n)]
    if missing:
        raise MissingCredentials(f"credentials lack {', '.join(missing)}")
    return [str(credentials[n]) for n in names]
