"""CKAN package_search harvesting against a local CKAN-like portal with more than 1000 datasets."""

from __future__ import annotations

from swath.platforms.ckan.harvester import map_package
from tests.backendkit import harvest
from tests.fakes.ckan import CKANPortal, make_package


def test_more_than_1000_datasets_despite_a_silent_rows_cap_and_a_change_while_paging(config):
    portal = CKANPortal(count=2345, max_rows=1000)
    moved = portal.packages[3]["id"]
    portal.on_search = lambda served: portal.touch(3) if served == 1 else None  # after the first page
    with portal.server as server:
        result = harvest(config, "ckan", server.url, options={"rows": 5000})
        searches = server.requests_to("/api/3/action/package_search")
    assert len(result.by_status("done")) == len(portal.packages)
    assert set(result.by_status("done")) == {p["id"] for p in portal.packages}
    assert moved in result.by_status("done")
    assert all(r.arg("sort") == "metadata_modified asc,id asc" for r in searches)
    assert len(searches) >= -(-len(portal.packages) // portal.max_rows)
    assert result.final["status"] == "completed success"
    assert result.totals()["done"] == len(portal.packages)


def test_incremental_by_metadata_modified(config):
    portal = CKANPortal(count=40)
    with portal.server as server:
        harvest(config, "ckan", server.url)
        newest = max(p["metadata_modified"] for p in portal.packages)
        portal.touch(0)
        second = harvest(config, "ckan", server.url)
        fq = server.requests_to("/api/3/action/package_search")[-1].arg("fq") or ""
    assert f"metadata_modified:[{newest}Z TO *]" in fq
    changed = {p["id"] for p in portal.packages if p["metadata_modified"] >= newest}
    assert set(second.by_status("done")) == changed and portal.packages[0]["id"] in changed
    assert second.by_status("deleted") == {}  # an incremental listing reports no disappearance


def test_package_mapping():
    package = make_package(7)
    ds = map_package(package, base="https://ckan.example.org").to_dict()
    res = package["resources"][0]
    assert (ds["remote_id"], ds["title"], ds["license"]) == (package["id"], package["title"], "cc-by")
    assert ds["tags"] == ["budget", f"commune-{7 % 7}", "finances"]
    assert ds["frequency"] == "annual"
    assert ds["temporal_coverage"] == {"start": "2020-01-01", "end": "2020-12-31"}
    assert ds["extras"]["uri"] == f"https://ckan.example.org/dataset/{package['name']}"
    got = ds["resources"][0]
    assert (got["url"], got["format"], got["mime"], got["filesize"]) == (res["url"], "csv", "text/csv", res["size"])
    assert got["checksum"] == {"type": "md5", "value": res["hash"]}
    assert got["description"] == "Le *budget*"  # from <p>Le <em>budget</em></p>


def test_a_broken_package_fails_alone(config):
    portal = CKANPortal(count=30)
    portal.packages[10]["resources"] = "not a list"  # mapping this one raises
    with portal.server as server:
        result = harvest(config, "ckan", server.url)
    broken = portal.packages[10]["id"]
    assert len(result.by_status("done")) == len(portal.packages) - 1
    assert [e["code"] for e in result.final["errors"]] == ["item_failed"]
    assert result.final["errors"][0]["message"].startswith(broken)


def test_an_incremental_harvest_reports_deleted_packages_as_deletions(config):
    """CKAN >= 2.9: include_deleted lists the deleted packages, whose `state: deleted` makes them deletions."""
    portal = CKANPortal(count=250, max_rows=100)
    with portal.server as server:
        first = harvest(config, "ckan", server.url)
        newest = max(p["metadata_modified"] for p in portal.packages)
        for index in range(0, 80, 2):  # 40 deleted
            portal.delete(index)
        for index in range(101, 121, 2):  # 10 modified
            portal.touch(index)
        second = harvest(config, "ckan", server.url)  # incremental by default
        searches = server.requests_to("/api/3/action/package_search")
    assert len(first.by_status("done")) == 250 and first.by_status("deleted") == {}
    deleted = {p["id"] for p in portal.packages if p["state"] == "deleted"}
    changed = {p["id"] for p in portal.packages if p["metadata_modified"] >= newest and p["state"] == "active"}
    assert len(deleted) == 40 and len(changed) >= 10
    assert set(second.by_status("deleted")) == deleted
    assert {r["deletion_reason"] for r in second.by_status("deleted").values()} == {"marked"}
    assert all(r["dataset"] is None for r in second.by_status("deleted").values())
    assert set(second.by_status("done")) == changed  # no deleted package exported as a dataset
    assert (second.totals()["done"], second.totals()["deleted"]) == (len(changed), 40)
    assert all(r.arg("include_deleted") == "true" for r in searches)
    assert second.final["status"] == "completed success" and "deletions_unseen" not in second.codes("infos")


def test_a_ckan_before_2_9_says_an_incremental_harvest_cannot_see_deletions(config):
    portal = CKANPortal(count=30, version="2.8.12")
    with portal.server as server:
        harvest(config, "ckan", server.url)
        portal.delete(3)
        portal.touch(5)
        second = harvest(config, "ckan", server.url)
        full = harvest(config, "ckan", server.url, options={"incremental": False})
        searches = server.requests_to("/api/3/action/package_search")
    assert second.by_status("deleted") == {} and portal.packages[5]["id"] in second.by_status("done")
    assert "deletions_unseen" in second.codes("infos")
    assert all(r.arg("include_deleted") is None for r in searches)  # not asked of a server that lacks it
    assert set(full.by_status("deleted")) == {portal.packages[3]["id"]}  # a full listing finds it
    assert full.by_status("deleted")[portal.packages[3]["id"]]["deletion_reason"] == "disappeared"
