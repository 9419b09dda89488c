"""An export's WARC list from sfm-ui's REST API (`/api/v1/warcs/`), as SFM's own exporters get it
(sfmutils.api_client.ApiClient.warcs): the WARCs sfm-ui recorded for the collection or seeds within the harvest
dates. Used when SWATH_SFM_API_URL is set; every path it names must lie in the harvest root. sfm-ui is a remote
like any other: its answers are read within SWATH_MAX_RESPONSE_BYTES and SWATH_HTTP_DEADLINE, its `next` pages
stay on its origin and never come back to one already read."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import urlsplit

import requests

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.jsontypes import JSONObject
from swath.core.paths import PathOutsideDataRoot, harvest_path
from swath.exporters.base import ExportFailed
from swath.exporters.warc_index import ListingAnswers, Selected
from swath.harvesters.guard import OriginGuard, guard_session, origin_of
from swath.harvesters.http import GuardedAdapter, Limits
from swath.messages import codes
from swath.messages.model import ExportStart

WARCS_PATH = "/api/v1/warcs/"
MAX_PAGES = 10_000  # sfm-ui pages by 100s or so: a million WARCs; a `next` chain longer than this is a loop


class SfmApiIndex(ListingAnswers):
    """A WarcIndex asking sfm-ui which WARCs an export reads; the rest of the Protocol lists the harvest root."""

    def __init__(self, *, config: Config, session: requests.Session | None = None) -> None:
        self.config = config
        self.root = config.harvest_base
        self.url = config.sfm_api_url.rstrip("/") + WARCS_PATH
        self.session = session or _bounded_session(config, self.url)

    def select(self, start: ExportStart) -> Selected:
        warcs: set[Path] = set()
        warnings: list[tuple[str, str]] = []
        for path in self._paths(start):
            try:
                warcs.add(harvest_path(self.config, path))
            except PathOutsideDataRoot as exc:
                warnings.append((codes.PATH_OUTSIDE_DATA_ROOT, f"sfm-ui lists a WARC outside the harvest root; "
                                 f"not read: {exc.message}"))
        return Selected(sorted(warcs, key=str), warnings=warnings)

    def _paths(self, start: ExportStart) -> Iterator[str]:
        """Every WARC sfm-ui lists for the export, following `next` on sfm-ui's own origin only."""
        params = {k: v for k, v in {
            "collection": start.collection_id,
            "seed": ",".join(seed.id for seed in start.seeds) or None,
            "harvest_date_start": start.harvest_date_start.isoformat() if start.harvest_date_start else None,
            "harvest_date_end": start.harvest_date_end.isoformat() if start.harvest_date_end else None,
        }.items() if v}
        url: str | None = self.url
        origin = _origin(self.url)
        read: set[str] = set()
        for _ in range(MAX_PAGES):
            if url is None:
                return
            if url in read:
                raise ExportFailed(f"sfm-ui's {WARCS_PATH} pointed its next page back to one already read; "
                                   f"the WARC list would never end", code=codes.PAGINATION_LOOP)
            read.add(url)
            page = self._get(url, params)
            params = {}  # `next` carries them
            results, following = page.get("results"), page.get("next")
            paths = [path for r in results if isinstance(r, dict) and isinstance(path := r.get("path"), str)] \
                if isinstance(results, list) else []
            if not isinstance(results, list) or len(paths) != len(results):
                raise ExportFailed(f"sfm-ui's {WARCS_PATH} answered without a list of WARCs with paths",
                                   code=codes.SFM_API_UNAVAILABLE)
            yield from paths
            if following is not None and (not isinstance(following, str) or _origin(following) != origin):
                raise ExportFailed(f"sfm-ui's {WARCS_PATH} pointed its next page away from {origin}; refused",
                                   code=codes.SFM_API_UNAVAILABLE)
            url = following if isinstance(following, str) else None
        raise ExportFailed(f"sfm-ui's {WARCS_PATH} kept answering with a next page ({MAX_PAGES} pages)",
                           code=codes.SFM_API_UNAVAILABLE)

    def _get(self, url: str, params: dict[str, str]) -> JSONObject:
        try:
            response = self.session.get(url, params=params, timeout=self.config.http_timeout)
            response.raise_for_status()
            page = response.json()
        except (requests.RequestException, ValueError, SwathError) as exc:
            why = exc.message if isinstance(exc, SwathError) else type(exc).__name__  # size limit, deadline
            raise ExportFailed(f"sfm-ui's WARC list at {_origin(url)}{WARCS_PATH} could not be read "
                               f"({why}); check SWATH_SFM_API_URL and that sfm-ui runs",
                               code=codes.SFM_API_UNAVAILABLE) from None
        if not isinstance(page, dict):
            raise ExportFailed(f"sfm-ui's {WARCS_PATH} answered with no JSON object", code=codes.SFM_API_UNAVAILABLE)
        return page


class _NoHarvest:
    """The adapter's Gate for a request outside a harvest: never stopped, nothing to log or redact."""

    def requests_refused(self) -> bool:
        return False

    def debug(self, text: str | Callable[[], str]) -> None:
        pass

    def add_secret(self, value: str) -> None:
        pass


def _bounded_session(config: Config, url: str) -> requests.Session:
    """The harvests' transport policy for sfm-ui: its own origin, a size limit and a deadline per answer."""
    session = guard_session(requests.Session())
    limits = Limits(timeout=config.http_timeout, max_response_bytes=config.max_response_bytes,
                    deadline=config.http_deadline)
    guard = OriginGuard(origins=frozenset({origin_of(url)}), secret_in=lambda text: False)
    adapter = GuardedAdapter(gate=_NoHarvest(), guard=guard, limits=limits)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    return session


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}"
