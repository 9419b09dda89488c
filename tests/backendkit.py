"""Shared by the metadata backend tests: run a harvest through the real engine, read its WARC records."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import orjson
from warcio.archiveiterator import ArchiveIterator

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.harvesters.run import run_harvest

# type -> (platform, class, stream) as in harvesters/registry.py; tests add their own plugin types here
BACKEND_TYPES = {
    "oai_pmh": ("oai_pmh", "swath.platforms.oai_pmh.harvester:OAIPMHHarvester", False),
    "dcat": ("dcat", "swath.platforms.dcat.harvester:DCATHarvester", False),
    "ckan": ("ckan", "swath.platforms.ckan.harvester:CKANHarvester", False),
    "opendatasoft": ("opendatasoft", "swath.platforms.opendatasoft.harvester:OpenDataSoftHarvester", False),
}


class Result:
    def __init__(self, published: list[tuple[str, dict[str, Any]]]) -> None:
        self.published = published
        self.statuses = [b for k, b in published if k.startswith("harvest.status.")]
        self.final = self.statuses[-1]
        self.warcs = [Path(b["warc"]["path"]) for k, b in published if k == "warc_created"]
        self.records: list[dict[str, Any]] = []  # our dataset records, in WARC order
        self.headers: list[dict[str, str]] = []
        self.responses: list[str] = []  # target URIs of recorded HTTP responses
        self.text = b""  # every record's decoded content, to search for what must not be there
        for path in self.warcs:
            with open(path, "rb") as fh:
                for rec in ArchiveIterator(fh):
                    data = rec.content_stream().read()
                    self.text += data
                    if rec.rec_type == "response":
                        self.responses.append(rec.rec_headers.get_header("WARC-Target-URI"))
                    elif rec.rec_type == "resource" and rec.rec_headers.get_header("WARC-Swath-Item-Type") == "dataset":
                        self.records.append(orjson.loads(data))
                        self.headers.append(dict(rec.rec_headers.headers))

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for counts in self.final["stats"].values():
            for label, n in counts.items():
                out[label] = out.get(label, 0) + n
        return out

    def codes(self, kind: str = "errors") -> list[str]:
        return [n["code"] for n in self.final[kind]]

    def by_status(self, status: str) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self.records if r["status"] == status}


def harvest(config: Config, htype: str, url: str | list[str], *, options: dict[str, Any] | None = None,
            path: str = "collection") -> Result:
    """Run one harvest of `htype`; seeds are seed-1, seed-2, ... for the URL(s) given."""
    return Result(run(config, htype, url, options=options, path=path))


def run(config: Config, htype: str, url: str | list[str], *, options: dict[str, Any] | None = None,
        path: str = "collection") -> list[tuple[str, dict[str, Any]]]:
    """`harvest` without reading its WARCs: what it published (a test measuring the harvest alone)."""
    urls = [url] if isinstance(url, str) else url
    body = {
        "id": f"h-{uuid.uuid4().hex[:8]}",
        "type": htype,
        "path": path,
        "seeds": [{"id": f"seed-{n}", "token": u} for n, u in enumerate(urls, 1)],
        "options": options or {},
        "collection_set": {"id": "cs-1"},
        "collection": {"id": "c-1"},
    }
    published: list[tuple[str, dict[str, Any]]] = []
    ctx = JobContext(config=config, publish=lambda key, b: published.append((key, b)), service="test")
    platform = BACKEND_TYPES[htype][0]
    run_harvest(body, routing_key=f"harvest.start.{platform}.{htype}", ctx=ctx)
    return published
