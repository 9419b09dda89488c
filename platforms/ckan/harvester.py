"""CKAN: package_search paged by a stable sort, incremental by metadata_modified."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, Unpack
from urllib.parse import quote

import requests

from swath.harvesters.backends import Backend, BackendArgs, BackendHarvester, Item, Page
from swath.harvesters.mapping import temporal
from swath.harvesters.mapping.dataset import Checksum, Dataset, Resource, add_tags, guess_checksum_type, title_from
from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.markdown import html_to_markdown
from swath.harvesters.mapping.vocab import guess_frequency, guess_license
from swath.messages import codes
from swath.platforms.ckan.declaration import PLATFORM

PAGE_SIZE = 1000  # CKAN's default ckan.search.rows_max; a server may return fewer, we page by what came
SORT = "metadata_modified asc,id asc"  # stable while we page: ties broken by id




class CKANBackend(Backend):
    """Options: rows (page size), fq (extra Solr filter), incremental (default true)."""

    name = PLATFORM.name
    display_name = PLATFORM.title

    def __init__(self, **kwargs: Unpack[BackendArgs]) -> None:
        super().__init__(**kwargs)
        self.api = self.source.url.rstrip("/") + "/api/3/action/"
        self.public_api = self.source.public_url.rstrip("/") + "/api/3/action/"  # for URIs kept: no user:pass@
        self._max_modified: str | None = None

    def search(self, **params: str | int | float | None) -> dict[str, Any]:
        body = self.fetch_json(self.api + "package_search", params=params)
        if not isinstance(body, dict) or not body.get("success") or not isinstance(body.get("result"), dict):
            error = body.get("error") if isinstance(body, dict) else None
            raise MetadataError(f"package_search failed: {error or 'unexpected answer'}")
        result: dict[str, Any] = body["result"]
        return result

    def _filters(self) -> list[str]:
        options = self.source.options
        filters = [f"({options['fq']})"] if options.get("fq") else []
        last = self.state.get(self.state_key("modified")) if options.get("incremental", True) else None
        if last:
            self.full_listing = False
            filters.append(f"metadata_modified:[{_solr_date(last)} TO *]")
        return filters

    def include_deleted(self) -> bool | None:
        """Whether package_search takes include_deleted (CKAN >= 2.9, by status_show); None: it does not say."""
        try:
            body = self.fetch_json(self.api + "status_show")
        except (MetadataError, requests.RequestException):
            return None
        result = body.get("result") if isinstance(body, dict) else None
        found = re.match(r"(\d+)\.(\d+)", str(result.get("ckan_version") or "")) if isinstance(result, dict) else None
        return (int(found[1]), int(found[2])) >= (2, 9) if found else None

    def _search_page(self, params: dict[str, str | int | float | None],
                     deleted: bool | None) -> tuple[dict[str, Any], bool]:
        """One package_search, asking for deleted packages when the server may have them; a server that
        refuses the parameter is asked again without it (and said so)."""
        if deleted is False:
            return self.search(**params), False
        try:
            return self.search(**params, include_deleted="true"), True
        except MetadataError:
            if deleted:
                raise
        return self.search(**params), False

    def list_items(self) -> Iterator[Item | Page]:
        """Keyset paging on (metadata_modified, id): a dataset modified while we page moves forward, never
        out of reach, and a server capping `rows` (1000 by default) silently costs nothing. Deleted packages
        are asked for (CKAN >= 2.9) and come back with `state: deleted`: deletions, never datasets."""
        rows = int(self.source.options.get("rows") or PAGE_SIZE)
        base, cursor, skip, seen = self._filters(), None, 0, set()
        if isinstance(self.resume, dict):  # an interrupted harvest: on from its last complete page
            cursor, skip, self._max_modified = self.resume["cursor"], self.resume["skip"], self.resume["max_modified"]
            deleted: bool | None = self.resume["deleted"]
        else:
            deleted = self.include_deleted()
        while True:
            filters = base + ([f"metadata_modified:[{_solr_date(cursor)} TO *]"] if cursor else [])
            params: dict[str, str | int | float | None] = {"q": "*:*", "rows": rows, "start": skip, "sort": SORT}
            if filters:
                params["fq"] = " AND ".join(filters)
            result, deleted = self._search_page(params, deleted)
            packages = [p for p in result.get("results") or [] if isinstance(p, dict)]
            for n, package in enumerate(packages):
                if not package.get("id") or not package.get("metadata_modified"):
                    yield Item(remote_id=f"(row {skip + n})", error="package without id or metadata_modified",
                               anonymous=True)
                    continue
                if package["id"] in seen:  # re-served at a tie of metadata_modified, or modified meanwhile
                    continue
                seen.add(package["id"])
                self._max_modified = max(self._max_modified or "", package["metadata_modified"])
                yield Item(remote_id=package["id"], uri=f"{self.public_api}package_show?id={quote(package['id'])}",
                           data=package, deleted=package.get("state") == "deleted")
            count = result["count"] if isinstance(result.get("count"), int) else 0
            if not packages or count <= skip + len(packages):
                self._note_deletions(deleted)
                return
            last = packages[-1].get("metadata_modified")
            if not last:
                raise MetadataError("package_search page ends with a package lacking metadata_modified")
            ties = sum(1 for p in packages if p.get("metadata_modified") == last)
            skip, cursor = (skip + ties if last == cursor else ties), last
            yield Page({"cursor": cursor, "skip": skip, "max_modified": self._max_modified, "deleted": deleted})

    def _note_deletions(self, deleted: bool) -> None:
        if not deleted and not self.full_listing:
            self.note("info", codes.DELETIONS_UNSEEN, "this CKAN does not list deleted datasets (package_search "
                      "include_deleted needs CKAN 2.9 or later): an incremental harvest cannot see deletions; "
                      "harvest with incremental: false to find them")

    def process(self, item: Item) -> Dataset | None:
        return map_package(item.data, base=self.source.public_url.rstrip("/"))

    def commit(self) -> None:
        if self._max_modified:
            self.state.set(self.state_key("modified"), self._max_modified)


def _solr_date(value: str) -> str:
    value = value.replace(" ", "T")
    return value if value.endswith("Z") else value + "Z"


def _extras(package: dict[str, Any]) -> dict[str, str | None]:
    return {e["key"]: e.get("value") for e in package.get("extras") or [] if isinstance(e, dict) and "key" in e}


def map_package(package: dict[str, Any], *, base: str) -> Dataset:
    extras = _extras(package)
    tags: list[str] = []
    add_tags(tags, [t.get("name", "") for t in package.get("tags") or [] if isinstance(t, dict)])
    add_tags(tags, [g.get("title") or g.get("name", "") for g in package.get("groups") or [] if isinstance(g, dict)])
    resources = []
    for res in package.get("resources") or []:
        url, fmt = res.get("url"), (res.get("format") or "").lower() or None
        digest = (res.get("hash") or "").strip()
        kind = guess_checksum_type(digest) if digest else None
        size = res.get("size")
        resources.append(Resource(
            title=res.get("name") or title_from(url, fmt),
            description=html_to_markdown(res["description"]) if res.get("description") else None,
            url=url,
            published=res.get("created"),
            last_modified=res.get("last_modified") or res.get("metadata_modified"),
            format=fmt,
            mime=res.get("mimetype"),
            filesize=int(size) if isinstance(size, (int, float)) or (isinstance(size, str) and size.isdigit())
            else None,
            checksum=Checksum(type=kind, value=digest) if kind else None,
        ))
    notes = package.get("notes")
    return Dataset(
        remote_id=package["id"],
        title=package.get("title") or package.get("name"),
        description=html_to_markdown(notes) if notes else None,
        tags=tags,
        frequency=guess_frequency(extras.get("frequency") or extras.get("accrual_periodicity")),
        temporal_coverage=temporal.from_range(extras.get("temporal_start"), extras.get("temporal_end")),
        license=guess_license([package.get("license_id") or "", package.get("license_url") or "",
                               package.get("license_title") or ""]),
        created_at=package.get("metadata_created"),
        last_modified=package.get("metadata_modified"),
        resources=resources,
        extras={"ckan:name": package.get("name"), "uri": f"{base}/dataset/{package.get('name') or package['id']}",
                "dct:identifier": extras.get("identifier") or extras.get("guid") or package["id"]},
    )


class CKANHarvester(BackendHarvester, declaration=PLATFORM):
    backend = CKANBackend
