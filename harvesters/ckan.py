"""CKAN: package_search paged by a stable sort, incremental by metadata_modified."""

from __future__ import annotations

from typing import Any, Iterator
from urllib.parse import quote

from harvesters.backends import Backend, BackendHarvester, Item
from harvesters.mapping import temporal
from harvesters.mapping.dataset import Checksum, Dataset, Resource, add_tags, guess_checksum_type, title_from
from harvesters.mapping.errors import MetadataError
from harvesters.mapping.markdown import html_to_markdown
from harvesters.mapping.vocab import guess_frequency, guess_license

PAGE_SIZE = 1000  # CKAN's default ckan.search.rows_max; a server may return fewer, we page by what came
SORT = "metadata_modified asc,id asc"  # stable while we page: ties broken by id


class CKANBackend(Backend):
    """Options: rows (page size), fq (extra Solr filter), incremental (default true)."""

    name = "ckan"
    display_name = "CKAN"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.api = self.source.url.rstrip("/") + "/api/3/action/"
        self._max_modified: str | None = None

    def search(self, **params: Any) -> dict[str, Any]:
        body = self.fetch_json(self.api + "package_search", params=params)
        if not isinstance(body, dict) or not body.get("success") or not isinstance(body.get("result"), dict):
            error = body.get("error") if isinstance(body, dict) else None
            raise MetadataError(f"package_search failed: {error or 'unexpected answer'}")
        return body["result"]

    def _filter(self) -> str | None:
        options = self.source.options
        filters = [str(options["fq"])] if options.get("fq") else []
        last = self.state.get(self.state_key("modified")) if options.get("incremental", True) else None
        if last:
            self.full_listing = False
            filters.append(f"metadata_modified:[{_solr_date(last)} TO *]")
        return " AND ".join(filters) or None

    def list_items(self) -> Iterator[Item]:
        rows = int(self.source.options.get("rows") or PAGE_SIZE)
        fq, start, total = self._filter(), 0, None
        while True:
            params = {"q": "*:*", "rows": rows, "start": start, "sort": SORT}
            if fq:
                params["fq"] = fq
            result = self.search(**params)
            packages = result.get("results") or []
            total = result.get("count") if isinstance(result.get("count"), int) else total
            for package in packages:
                if not isinstance(package, dict) or not package.get("id"):
                    yield Item(remote_id=f"(row {start})", error="package without an id", anonymous=True)
                    start += 1
                    continue
                modified = package.get("metadata_modified")
                if modified and (self._max_modified is None or modified > self._max_modified):
                    self._max_modified = modified
                yield Item(remote_id=package["id"], uri=f"{self.api}package_show?id={quote(package['id'])}",
                           data=package)
                start += 1
            # Page by what the server returned (it may cap rows silently), until count is reached.
            if not packages or (total is not None and start >= total):
                return

    def process(self, item: Item) -> Dataset | None:
        return map_package(item.data, base=self.source.url.rstrip("/"))

    def commit(self) -> None:
        if self._max_modified:
            self.state.set(self.state_key("modified"), self._max_modified)


def _solr_date(value: str) -> str:
    value = value.replace(" ", "T")
    return value if value.endswith("Z") else value + "Z"


def _extras(package: dict[str, Any]) -> dict[str, str]:
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
            filesize=int(size) if isinstance(size, (int, float)) or (isinstance(size, str) and size.isdigit()) else None,
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


class CKANHarvester(BackendHarvester):
    platform = "ckan"
    service = "CKAN Harvester"
    types = {"ckan": "harvest_sources"}
    backend = CKANBackend
