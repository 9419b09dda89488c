"""The WARC record of one harvested item: the mapped dataset (or a deletion) plus udata's harvest metadata.

Shape documented in docs/metadata-harvesting.md; exporters read these `resource` records.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import orjson

from swath.core.masking import without_userinfo
from swath.harvesters.mapping.dataset import Dataset
from swath.messages.model import now_iso

RECORD_CONTENT_TYPE = "application/json"
DONE, SKIPPED, FAILED, DELETED = "done", "skipped", "failed", "deleted"


@dataclass(kw_only=True)
class Source:
    """One harvest source: a seed's endpoint URL (its token) and id (harvest:source_id)."""

    id: str
    url: str
    options: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property  # read for every item's record; a source's URL does not change
    def domain(self) -> str:
        return urlsplit(self.url).hostname or ""

    @functools.cached_property
    def public_url(self) -> str:
        """The URL without `user:password@` (requests sends those as Basic auth): the one to store or show."""
        return without_userinfo(self.url)


def harvest_metadata(source: Source, backend: str, remote_id: str) -> dict[str, str]:
    """udata's HarvestDatasetMetadata: harvest:domain, harvest:remote_id, harvest:source_id, harvest:last_update."""
    return {
        "domain": source.domain,
        "remote_id": remote_id,
        "source_id": source.id,
        "last_update": now_iso(),
        "backend": backend,
        "source_url": source.public_url,
    }


def record_payload(backend: str, source: Source, remote_id: str, *, dataset: Dataset | None, status: str,
                   reason: str | None = None) -> bytes:
    body = {
        "type": "dataset",
        "id": remote_id,
        "status": status,
        "deleted": status == DELETED,
        "deletion_reason": reason,
        "dataset": dataset,  # orjson writes a dataclass as asdict() would, without asdict's deep copy
        "harvest": harvest_metadata(source, backend, remote_id),
    }
    return orjson.dumps(body)


def record_headers(backend: str, source: Source, remote_id: str, status: str) -> dict[str, str]:
    return {
        "WARC-Swath-Item-Type": "dataset",
        "WARC-Swath-Backend": backend,
        "WARC-Swath-Remote-Id": remote_id,
        "WARC-Swath-Source-Id": source.id,
        "WARC-Swath-Item-Status": status,
    }


