"""An OpenDataSoft portal on 127.0.0.1: Explore API v2.1 catalog/datasets (limit <= 100,
offset + limit <= 10000, order_by) and catalog/exports/json (the whole catalog)."""

from __future__ import annotations

import json
from typing import Any

from tests.fakes.httpserver import FakeServer, Request, Response

API = "/api/explore/v2.1/catalog"


def make_dataset(n: int) -> dict[str, Any]:
    geo = n % 3 == 0
    return {
        "dataset_id": f"comptages-velo-{n:05d}",
        "dataset_uid": f"da_{n:06x}",
        "has_records": n % 10 != 0,
        "features": ["analyze", "timeserie"] + (["geo"] if geo else []),
        "attachments": (
            [{"id": f"notice_{n}_pdf", "title": f"Notice {n}", "mimetype": "application/pdf"}] if n % 4 == 0 else []
        ),
        "metas": {
            "default": {
                "title": f"Comptages vélo — site {n}",
                "description": f"<p>Comptages <b>horaires</b> du site {n}.</p>",
                "keyword": ["vélo", f"site {n}"],
                "theme": ["Mobilité"],
                "license": "Open Database License (ODbL)",
                "license_url": "http://opendatacommons.org/licenses/odbl/",
                "modified": f"2024-03-0{1 + n % 9}T10:00:00+00:00",
                "data_processed": "2024-03-10T00:00:00+00:00",
                "records_count": 100 * n,
            },
            "dcat": {"accrualperiodicity": "http://purl.org/cld/freq/daily" if n % 2 else None},
        },
    }


class ODSPortal:
    def __init__(self, *, count: int, max_limit: int = 100, window: int = 10_000) -> None:
        self.datasets = [make_dataset(n) for n in range(1, count + 1)]
        self.max_limit, self.window = max_limit, window
        self.server = FakeServer({f"{API}/datasets": self.search, f"{API}/exports/json": self.export})

    def _ordered(self, req: Request) -> list[dict[str, Any]]:
        order = req.arg("order_by") or ""
        return sorted(self.datasets, key=lambda d: d["dataset_id"]) if order == "dataset_id" else list(self.datasets)

    def search(self, req: Request) -> Response:
        limit, offset = int(req.arg("limit", "10")), int(req.arg("offset", "0"))
        if limit > self.max_limit or offset + limit > self.window:
            error = {"error_code": "InvalidRESTParameterError",
                     "message": "Invalid value for limit/offset "
                                f"(limit <= {self.max_limit}, offset + limit <= {self.window})"}
            return Response(400, json.dumps(error).encode())
        found = self._ordered(req)
        return Response(200, json.dumps({"total_count": len(found), "results": found[offset:offset + limit]}).encode())

    def export(self, req: Request) -> Response:
        return Response(200, json.dumps(self._ordered(req)).encode())
