"""A tiny built-in platform for tests and the quickstart: JSON pages and newline-delimited streams.

generic_pages: each seed's token is a URL answering {"items": [{"id": ...}, ...], "next": URL|null};
the pages are followed to the end. The next page is a checkpoint of the harvest, so a resumed
harvest continues after the last page whose WARC was complete; with options.incremental
the highest item id seen per seed is sent as `since_id` on the next harvest.
generic_stream: the first seed's token is a URL streaming one JSON item per line until harvest.stop
(every line recorded in the WARC is counted, including those read just before the stop).
Credentials: `api_key` goes in the query string, `bearer_token` in an Authorization header.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import requests

from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse, NotFound
from swath.harvesters.pages import listing
from swath.harvesters.values import json_body
from swath.messages import codes
from swath.platforms.generic.declaration import PLATFORM


def without_params(url: str, names: Iterable[str]) -> str:
    """`url` without the query parameters `names`: a server's `next` link may carry back the api_key the
    harvester sent; it is re-added on each request, so the cursor (kept in the resume journal) holds none."""
    split = urlsplit(url)
    drop = set(names)
    if not drop or not split.query:
        return url
    pairs = parse_qsl(split.query, keep_blank_values=True)
    kept = [(k, v) for k, v in pairs if k not in drop]
    return url if len(kept) == len(pairs) else urlunsplit(split._replace(query=urlencode(kept)))


class GenericHarvester(Harvester, declaration=PLATFORM):

    def _auth(self) -> tuple[dict[str, str], dict[str, str]]:
        creds = self.harvest.start.credentials
        params = {"api_key": str(creds["api_key"])} if creds.get("api_key") else {}  # the schema allows a number
        headers = {"Authorization": f"Bearer {creds['bearer_token']}"} if creds.get("bearer_token") else {}
        return params, headers

    def pages(self) -> None:
        harvest = self.harvest
        params, headers = self._auth()
        incremental = bool(harvest.start.options.get("incremental"))
        for seed in harvest.start.seeds:
            since_key = f"generic:since_id:{seed.id}"
            since = harvest.state.get(since_key) if incremental else None
            # the parameters added to every request: never part of a cursor (nor of the journal holding it)
            query = dict(params, **({"since_id": since} if since else {}))
            # where an interrupted run of this harvest got to: the next page, and the newest id so far
            url, newest = harvest.resume_point(f"seed:{seed.id}", (seed.token, since))
            with listing(harvest, what=f"generic seed {seed.id}", seed_id=seed.id) as guard:
                while url:
                    url = without_params(url, query)
                    guard.cursor(url)  # a `next` back to a page served already ends the listing
                    response = harvest.http.get(url, params=query, headers=headers)
                    if response.status_code == 404:
                        harvest.warning(codes.TOKEN_NOT_FOUND, f"{seed.token} not found", seed.id)
                        break
                    items, following = self._page(response, url, seed.id)
                    if incremental and items:
                        newest = self._newest(newest, items, seed.id)
                    url = without_params(urljoin(response.url, following), query) if following else None
                    harvest.checkpoint(f"seed:{seed.id}", (url, newest), items=len(items))
            harvest.checkpoint(f"seed:{seed.id}", (None, newest))
            if incremental and newest is not None and not guard.looped:
                harvest.state.set(since_key, newest)

    @staticmethod
    def _page(response: requests.Response, url: str, seed_id: str) -> tuple[list, str | None]:
        """A page's items and its `next` link; BadResponse for anything else."""
        what = f"page {url}"
        page = json_body(response, what=what, seed_id=seed_id)
        items = page.get("items") if isinstance(page, dict) else None
        following = page.get("next") if isinstance(page, dict) else None
        if not isinstance(items, list) or not isinstance(following, str | None):
            raise BadResponse(f"{what} is not {{items, next}} JSON", seed_id=seed_id)
        return items, following

    @staticmethod
    def _newest(newest: object, items: list, seed_id: str) -> object:
        try:
            return max(newest if newest is not None else items[0]["id"], *(item["id"] for item in items))
        except (KeyError, TypeError):  # an item without an id, or ids that do not compare (1 and "a", objects)
            raise BadResponse("a page's items lack comparable ids; incremental needs them", seed_id=seed_id) from None

    def stream(self) -> None:
        harvest = self.harvest
        params, headers = self._auth()
        url = harvest.start.seeds[0].token if harvest.start.seeds else None
        if not isinstance(url, str):  # none, or a seed without a text token
            raise NotFound("generic_stream needs one seed whose token is the stream URL")
        response = harvest.http.get(url, params=params, headers=headers, stream=True)
        # read to EOF: on harvest.stop the engine ends the stream after the lines already recorded
        with response:
            for line in response.iter_lines():
                if line.strip():
                    harvest.count("items")
