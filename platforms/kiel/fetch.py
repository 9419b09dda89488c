"""Renew one object: request it (through the harvest's recording session), store status, type and
body, and follow redirects hop by hop so every URL in a chain gets its own object directory."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urljoin

import requests

from swath.harvesters.errors import HarvestError
from swath.platforms.kiel.archive import RecordDir
from swath.platforms.kiel.objects import Version

REDIRECTS = {301, 302, 303, 307, 308}
MAX_HOPS = 10


@dataclass
class Fetched:
    url: str
    status: int
    version: Version
    unchanged: bool  # the body equals the previous version's: stored as a symlink
    problem: str = ""  # why the status is 000, or a redirect that could not be followed
    loop: bool = False  # the redirect chain looped or was too long
    location: str = ""  # a redirect's absolute target
    failed: bool = False  # no HTTP answer, or the engine gave up on it (401/403, 5xx after retries)

    @property
    def outcome(self) -> str:
        """What became of this hop, as its note says (docs/kiel.md, Notes)."""
        if self.failed:
            return "failed"
        if self.loop:
            return "redirect-loop"
        if self.status in REDIRECTS:
            return "redirected" if self.location else "failed"
        return "unchanged" if self.unchanged else "stored"


def renew_object(session: requests.Session, record: RecordDir, url: str, *,
                 clock: Callable[[], float]) -> list[Fetched]:
    """Fetch `url` and its redirect chain; one Fetched per hop, in order."""
    chain: list[Fetched] = []
    seen: set[str] = set()
    while True:
        seen.add(url)
        obj = record.object(url)
        tist = obj.fresh_tist(int(clock()))  # the request tist: when the request started
        status, content_type, body, location, problem = _get(session, url)
        before = obj.versions()
        version = obj.store(tist=tist, status=status, content_type=content_type, body=body)
        unchanged = bool(before) and version.path.is_symlink()
        fetched = Fetched(url, status, version, unchanged, problem, failed=bool(problem))
        chain.append(fetched)
        if status not in REDIRECTS:
            return chain
        if not location:
            fetched.problem = f"{url} answered {status} without a Location"
            return chain
        target = fetched.location = urljoin(url, location)
        obj.redirect(tist=tist, location=target)
        if target in seen or len(chain) > MAX_HOPS:
            fetched.problem, fetched.loop = f"redirect loop or more than {MAX_HOPS} hops at {target}", True
            return chain
        url = target


def _get(session: requests.Session, url: str) -> tuple[int, str | None, bytes, str | None, str]:
    try:
        response = session.get(url, allow_redirects=False)
    except HarvestError as exc:  # 401/403 and exhausted 5xx retries arrive as errors; keep their status
        return exc.status or 0, None, b"", None, f"{exc.code}: {exc.message}"
    except requests.RequestException as exc:
        return 0, None, b"", None, f"{type(exc).__name__}: {exc}"
    return (response.status_code, response.headers.get("Content-Type"), response.content,
            response.headers.get("Location"), "")
