"""OpenDataSoft Explore v2.1 catalog harvesting against a local portal with more than 1000 datasets."""

from __future__ import annotations

from swath.platforms.opendatasoft.harvester import OpenDataSoftBackend, map_dataset
from tests.backendkit import harvest
from tests.fakes.ods import API, ODSPortal, make_dataset


def test_catalog_of_more_than_1000_datasets(config):
    portal = ODSPortal(count=1234)
    with portal.server as server:
        result = harvest(config, "opendatasoft", server.url)
        pages = server.requests_to(f"{API}/datasets")
    assert set(result.by_status("done")) == {d["dataset_id"] for d in portal.datasets}
    assert len(pages) == -(-len(portal.datasets) // portal.max_limit)
    assert all(int(r.arg("limit")) <= portal.max_limit and r.arg("order_by") == "dataset_id" for r in pages)
    assert result.final["status"] == "completed success"
    record = result.by_status("done")[portal.datasets[0]["dataset_id"]]
    assert record["harvest"]["source_id"] == "seed-1" and record["harvest"]["domain"] == "127.0.0.1"


def test_past_the_paging_window_the_export_is_read(config, monkeypatch):
    portal = ODSPortal(count=1234, window=500)  # a portal's window shrunk so the test stays small
    monkeypatch.setattr(OpenDataSoftBackend, "max_window", 500)
    with portal.server as server:
        result = harvest(config, "opendatasoft", server.url)
        exports = server.requests_to(f"{API}/exports/json")
    assert len(exports) == 1
    assert set(result.by_status("done")) == {d["dataset_id"] for d in portal.datasets}
    assert result.totals()["done"] == len(portal.datasets) and result.final["errors"] == []


def test_dataset_mapping():
    entry = make_dataset(12)  # has records, geo, one attachment
    ds = map_dataset(entry, root="https://ods.example.org").to_dict()
    metas = entry["metas"]["default"]
    assert (ds["remote_id"], ds["title"]) == (entry["dataset_id"], metas["title"])
    assert ds["description"] == "Comptages **horaires** du site 12."
    assert ds["tags"] == ["vélo", "site 12", "mobilité"]
    assert ds["license"] == "odc-odbl" and ds["frequency"] is None
    formats = [r["format"] for r in ds["resources"] if r["format"]]
    assert formats == ["csv", "json", "xlsx", "geojson", "shp"]
    assert ds["resources"][-1]["title"] == entry["attachments"][0]["title"]
    dataset_api = f"https://ods.example.org{API}/datasets/{entry['dataset_id']}/"
    assert all(r["url"].startswith(dataset_api) for r in ds["resources"])
    no_records = map_dataset(make_dataset(10), root="https://ods.example.org").to_dict()
    assert no_records["resources"] == [] and map_dataset(make_dataset(1), root="x").frequency == "daily"
