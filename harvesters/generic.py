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

from urllib.parse import urljoin

from swath.core.platforms import HarvestKind, Platform, options
from swath.harvesters.base import Harvester
from swath.harvesters.errors import BadResponse, NotFound
from swath.messages import codes

PLATFORM = Platform(
    name="generic",
    title="Generic",
    harvester="swath.harvesters.generic:GenericHarvester",
    harvest_types=(HarvestKind(name="generic_pages", method="pages"),
                   HarvestKind(name="generic_stream", method="stream", stream=True)),
    options=options(incremental={"type": "boolean", "description": "send the highest id seen as since_id"}),
)


class GenericHarvester(Harvester):
    platform = PLATFORM.name
    service = PLATFORM.harvester_service
    types = PLATFORM.harvest_methods
    stream_types = PLATFORM.stream_types

    def _auth(self) -> tuple[dict[str, str], dict[str, str]]:
        creds = self.harvest.start.credentials
        params = {"api_key": creds["api_key"]} if creds.get("api_key") else {}
        headers = {"Authorization": f"Bearer {creds['bearer_token']}"} if creds.get("bearer_token") else {}
        return params, headers

    def pages(self) -> None:
        harvest = self.harvest
        params, headers = self._auth()
        incremental = bool(harvest.start.options.get("incremental"))
        for seed in harvest.start.seeds:
            since_key = f"generic:since_id:{seed.id}"
            since = harvest.state.get(since_key) if incremental else None
            # where an interrupted run of this harvest got to: the next page, and the newest id so far
            url, newest = harvest.resume_point(f"seed:{seed.id}", (seed.token, since))
            while url:
                query = dict(params, **({"since_id": since} if since else {}))
                response = harvest.http.get(url, params=query, headers=headers)
                if response.status_code == 404:
                    harvest.warning(codes.TOKEN_NOT_FOUND, f"{seed.token} not found", seed.id)
                    break
                try:
                    page = response.json()
                    items = page["items"]
                except (ValueError, KeyError, TypeError):
                    raise BadResponse(f"page {response.url} is not {{items, next}} JSON", seed_id=seed.id) from None
                if incremental and items:
                    newest = max(newest or items[0]["id"], *(item["id"] for item in items))
                url = urljoin(response.url, page["next"]) if page.get("next") else None
                harvest.checkpoint(f"seed:{seed.id}", (url, newest), items=len(items))
            harvest.checkpoint(f"seed:{seed.id}", (None, newest))
            if incremental and newest is not None:
                harvest.state.set(since_key, newest)

    def stream(self) -> None:
        harvest = self.harvest
        params, headers = self._auth()
        if not harvest.start.seeds:
            raise NotFound("generic_stream needs one seed whose token is the stream URL")
        response = harvest.http.get(harvest.start.seeds[0].token, params=params, headers=headers, stream=True)
        # read to EOF: on harvest.stop the engine ends the stream after the lines already recorded
        with response:
            for line in response.iter_lines():
                if line.strip():
                    harvest.count("items")
