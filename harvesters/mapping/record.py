"""The WARC record of one harvested item: the mapped dataset (or a deletion) plus udata's harvest metadata.

Shape documented in docs/metadata-harvesting.md; exporters read these `resource` records.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

import orjson

from harvesters.mapping.dataset import Dataset

if TYPE_CHECKING:
    from harvesters.backends import Backend, Source

RECORD_CONTENT_TYPE = "application/json"
DONE, SKIPPED, FAILED, DELETED = "done", "skipped", "failed", "deleted"


def harvest_metadata(source: "Source", backend: "Backend", remote_id: str) -> dict[str, str]:
    """udata's HarvestDatasetMetadata: harvest:domain, harvest:remote_id, harvest:source_id, harvest:last_update."""
    return {
        "domain": source.domain,
        "remote_id": remote_id,
        "source_id": source.id,
        "last_update": dt.datetime.now(dt.timezone.utc).isoformat(),
        "backend": backend.name,
        "source_url": source.url,
    }


def record_payload(backend: "Backend", remote_id: str, *, dataset: Dataset | None, status: str,
                   reason: str | None = None) -> bytes:
    body = {
        "type": "dataset",
        "id": remote_id,
        "status": status,
        "deleted": status == DELETED,
        "deletion_reason": reason,
        "dataset": dataset.to_dict() if dataset else None,
        "harvest": harvest_metadata(backend.source, backend, remote_id),
    }
    return orjson.dumps(body)


def record_headers(backend: "Backend", remote_id: str, status: str) -> dict[str, str]:
    return {
        "WARC-Swath-Item-Type": "dataset",
        "WARC-Swath-Backend": backend.name,
        "WARC-Swath-Remote-Id": remote_id,
        "WARC-Swath-Source-Id": backend.source.id,
        "WARC-Swath-Item-Status": status,
    }


