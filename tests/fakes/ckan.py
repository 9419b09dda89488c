"""A CKAN portal on 127.0.0.1: /api/3/action/package_search over generated packages, like CKAN 2.9+.

It caps `rows` at `max_rows` without saying so (ckan.search.rows_max), understands the
`metadata_modified:[X TO *]` filter and `sort` on metadata_modified/id, and can change a package
while a harvest pages through (`on_search`). `delete(i)` deletes a package as CKAN does (state
`deleted`, metadata_modified bumped); package_search lists it only with `include_deleted=true`, and only
from version 2.9 on (ckan.search.remove_deleted_packages = false); `status_show` gives the version.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable
from typing import Any

from tests.fakes.httpserver import FakeServer, Request, Response

START = dt.datetime(2022, 1, 1)
_RANGE = re.compile(r"metadata_modified:\[(\S+) TO \*\]")


def make_package(n: int) -> dict[str, Any]:
    # every third pair shares a timestamp: ties that paging must not lose or repeat
    modified = (START + dt.timedelta(minutes=n - n % 3)).isoformat(timespec="microseconds")
    name = f"budget-{n:05d}"
    return {
        "id": f"00000000-0000-4000-8000-{n:012d}",
        "name": name,
        "title": f"Budget primitif {n}",
        "state": "active",
        "notes": f"Budget de la commune {n}.\n\n**Source** : service des finances.",
        "license_id": "cc-by",
        "license_title": "Creative Commons Attribution",
        "metadata_created": START.isoformat(timespec="microseconds"),
        "metadata_modified": modified,
        "tags": [{"name": "budget"}, {"name": f"commune-{n % 7}"}],
        "groups": [{"name": "finances", "title": "Finances"}],
        "extras": [{"key": "frequency", "value": "annual"},
                   {"key": "temporal_start", "value": "2020-01-01"}, {"key": "temporal_end", "value": "2020-12-31"}],
        "resources": [{
            "id": f"r-{n}", "name": f"budget-{n}.csv", "url": f"https://ckan.example.org/download/{name}.csv",
            "format": "CSV", "mimetype": "text/csv", "size": 2048 + n, "hash": f"{n:032x}",
            "created": "2022-01-01T00:00:00", "last_modified": modified, "description": "<p>Le <em>budget</em></p>",
        }],
    }


class CKANPortal:
    def __init__(self, *, count: int, max_rows: int = 1000, version: str = "2.10.4") -> None:
        self.packages = [make_package(n) for n in range(1, count + 1)]
        self.max_rows = max_rows
        self.version = version
        self.on_search: Callable[[int], None] = lambda served: None  # called before each search is answered
        self.served = 0
        self.server = FakeServer({"/api/3/action/package_search": self.search,
                                  "/api/3/action/status_show": self.status_show})

    def status_show(self, req: Request) -> Response:
        body = {"success": True, "result": {"ckan_version": self.version, "site_title": "fake"}}
        return Response(200, json.dumps(body).encode())

    def _deleted_listed(self, req: Request) -> bool:
        major, minor = (int(part) for part in self.version.split(".")[:2])
        return (major, minor) >= (2, 9) and (req.arg("include_deleted") or "").lower() == "true"

    def search(self, req: Request) -> Response:
        self.on_search(self.served)
        self.served += 1
        found = [p for p in self.packages if p.get("state", "active") != "deleted" or self._deleted_listed(req)]
        for since in _RANGE.findall(req.arg("fq") or ""):
            since = since.rstrip("Z")
            found = [p for p in found if p["metadata_modified"] >= since]
        sort = req.arg("sort") or "score desc, metadata_modified desc"
        for field, order in reversed([part.strip().split() for part in sort.split(",")]):
            if field in {"metadata_modified", "id", "name"}:
                found.sort(key=lambda p: p[field], reverse=order == "desc")
        start, rows = int(req.arg("start", "0")), min(int(req.arg("rows", "10")), self.max_rows)
        body = {"help": "package_search", "success": True,
                "result": {"count": len(found), "sort": sort, "results": found[start:start + rows]}}
        return Response(200, json.dumps(body).encode())

    def touch(self, index: int) -> None:
        """Modify a package now: it moves to the end of a metadata_modified-ordered listing."""
        latest = max(p["metadata_modified"] for p in self.packages)
        bumped = dt.datetime.fromisoformat(latest) + dt.timedelta(seconds=1)
        self.packages[index]["metadata_modified"] = bumped.isoformat(timespec="microseconds")

    def delete(self, index: int) -> None:
        """package_delete: the package stays, `state: deleted`, modified now."""
        self.touch(index)
        self.packages[index]["state"] = "deleted"
