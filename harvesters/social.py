"""Small pieces shared by the social platform harvesters (Twitter, Flickr, Tumblr)."""

from __future__ import annotations

from typing import Any

import requests
from requests.adapters import HTTPAdapter

from harvesters.errors import HarvestError
from messages import codes


class MissingCredentials(HarvestError):
    code = codes.BAD_REQUEST  # the start message lacks the credentials this platform needs


class Rebased(HTTPAdapter):
    """Sends requests for the library's hard-coded API root to the configured one, through `inner`
    (the recording adapter), so twarc and flickrapi need no patching."""

    def __init__(self, *, default: str, base: str, inner: HTTPAdapter) -> None:
        super().__init__()
        self.default = default
        self.base = base
        self.inner = inner

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        request.url = self.base + (request.url or "")[len(self.default):]
        return self.inner.send(request, **kwargs)

    def close(self) -> None:
        self.inner.close()


def mount_recording(session: requests.Session, *, adapter: HTTPAdapter, default: str, base: str) -> None:
    """Route every request of a client library's session through the recording adapter, with the
    library's API root (`default`) replaced by `base` when they differ."""
    session.mount("https://", adapter)
    session.mount("http://", adapter)
    if base.rstrip("/") != default.rstrip("/"):
        session.mount(default.rstrip("/") + "/", Rebased(default=default.rstrip("/"), base=base.rstrip("/"),
                                                         inner=adapter))


def credential(credentials: dict[str, Any], *names: str) -> list[str]:
    """The named credentials as strings, or MissingCredentials naming the ones absent (never their values)."""
    missing = [n for n in names if not credentials.get(n)]
    if missing:
        raise MissingCredentials(f"credentials lack {', '.join(missing)}")
    return [str(credentials[n]) for n in names]
