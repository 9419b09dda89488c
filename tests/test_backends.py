"""The backend framework: entry-point plugins, per-item outcomes, listing errors, through the real engine."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from click.testing import CliRunner

from swath.cli import cli
from swath.core.platforms import HarvestKind, Platform
from swath.harvesters.backend_plugins import describe_backends, installed_backends, load_backend
from swath.harvesters.backends import Backend, Item, harvester_for
from swath.harvesters.mapping.dataset import Dataset
from swath.harvesters.mapping.errors import MetadataError
from swath.messages import codes
from tests.backendkit import harvest
from tests.entrypoints import install_entry_points
from tests.fakes.httpserver import FakeServer, Response

# What the plugin's remote lists: id -> what its detail answers (None: 404).
CATALOG = {
    "a": {"title": "Alpha"}, "b": {"title": "Beta"}, "c": {"skip": True}, "d": None,
    "e": {"title": 42}, "f": {"title": "Phi", "deleted": True}, "g": {"title": "Gamma"},
}


class ListBackend(Backend):
    """A third-party backend in udata's style: list ids from /list, fetch and map each from /item."""

    name = "listing"
    display_name = "Listing (test plugin)"

    def list_items(self) -> Iterator[Item]:
        listing = self.fetch_json(f"{self.source.url}/list")
        for entry in listing["items"]:
            if entry == "BREAK":
                raise MetadataError("listing broke off")
            yield Item(remote_id=entry["id"], uri=f"{self.source.url}/item/{entry['id']}",
                       deleted=bool(entry.get("deleted")))

    def process(self, item: Item) -> Dataset | None:
        detail = self.fetch_json(f"{self.source.url}/item/{item.remote_id}")
        if detail.get("skip"):
            return None
        if not isinstance(detail["title"], str):
            raise ValueError(f"title is a {type(detail['title']).__name__}")
        return Dataset(remote_id=item.remote_id, title=detail["title"])


ListHarvester = harvester_for(ListBackend)
LISTING = Platform(name="listing", title="Listing (test plugin)", harvester="tests.test_backends:ListHarvester",
                   harvest_types=(HarvestKind(name="listing", method="harvest_sources"),))


def _server(listing: list) -> FakeServer:
    def item(req):
        detail = CATALOG.get(req.path.rsplit("/", 1)[-1])
        return Response(404, b'{"error": "gone"}') if detail is None else Response(200, json.dumps(detail).encode())

    server = FakeServer({"/list": lambda req: Response(200, json.dumps({"items": listing}).encode())})
    for key in CATALOG:
        server.routes[f"/item/{key}"] = item
    return server


@pytest.fixture
def listing_type(monkeypatch, tmp_path_factory):
    install_entry_points(tmp_path_factory.mktemp("plugins"), monkeypatch,
                         {"swath.platforms": {"listing": "tests.test_backends:LISTING"}})
    from tests import backendkit as support

    monkeypatch.setitem(support.BACKEND_TYPES, "listing", ("listing", "tests.test_backends:ListHarvester", False))


def _entries(keys: list[str]) -> list:
    return [{"id": k, "deleted": bool((CATALOG[k] or {}).get("deleted"))} for k in keys]


def test_each_item_has_its_own_outcome(config, listing_type):
    with _server(_entries(list(CATALOG))) as server:
        result = harvest(config, "listing", server.url)
    expected = {
        "done": {k for k, v in CATALOG.items()
                 if v and not v.get("deleted") and not v.get("skip") and isinstance(v["title"], str)},
        "skipped": {k for k, v in CATALOG.items() if v and v.get("skip")},
        "deleted": {k for k, v in CATALOG.items() if v and v.get("deleted")},
        "failed": {k for k, v in CATALOG.items()
                   if v is None or (not v.get("skip") and not isinstance(v.get("title"), str))},
    }
    totals = result.totals()
    for status, ids in expected.items():
        assert totals.get(status, 0) == len(ids), status
    assert set(result.by_status("done")) == expected["done"]
    assert set(result.by_status("deleted")) == expected["deleted"]
    failed_ids = {e["message"].split(":", 1)[0] for e in result.final["errors"]}
    assert failed_ids == expected["failed"]
    assert {e["code"] for e in result.final["errors"]} == {codes.ITEM_FAILED}
    assert any("title is a int" in e["message"] for e in result.final["errors"])
    assert result.final["status"] == "completed failure"  # failures are errors, yet every other item is in
    statuses = {h["WARC-Swath-Remote-Id"]: h["WARC-Swath-Item-Status"] for h in result.headers}
    assert statuses == {**{k: "done" for k in expected["done"]}, **{k: "deleted" for k in expected["deleted"]}}
    assert result.by_status("done")["a"]["dataset"]["title"] == "Alpha"


def test_a_broken_listing_keeps_what_came_and_deletes_nothing(config, listing_type):
    keys = ["a", "b", "g"]
    with _server(_entries(keys)) as server:
        first = harvest(config, "listing", server.url)
    with _server(_entries(["a"]) + ["BREAK"]) as server:
        broken = harvest(config, "listing", server.url)
    with _server(_entries(["a"])) as server:
        complete = harvest(config, "listing", server.url)
    assert set(first.by_status("done")) == set(keys)
    assert broken.codes() == [codes.BAD_RESPONSE] and set(broken.by_status("done")) == {"a"}
    assert broken.by_status("deleted") == {}  # an unfinished listing proves nothing about absence
    assert set(complete.by_status("deleted")) == {"b", "g"}  # the complete one does


def test_entry_point_plugins_are_listed_and_loaded(tmp_path, monkeypatch):
    dist = tmp_path / "swath_listing-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: swath-listing\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[swath.backends]\nlisting = tests.test_backends:ListBackend\nbroken = no_such_module:Nope\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = installed_backends()
    assert found["listing"] == "tests.test_backends:ListBackend"
    assert {"oai_pmh", "dcat", "ckan", "opendatasoft"} <= set(found)
    assert load_backend("listing") is ListBackend
    rows = {row["name"]: row for row in describe_backends()}
    assert rows["listing"]["origin"] == "entry point" and rows["listing"]["display_name"] == ListBackend.display_name
    assert "error" in rows["broken"] and rows["dcat"]["origin"] == "built-in"
    # `swath harvest backends` shows these very rows, the broken plugin with its error
    listed = CliRunner().invoke(cli, ["harvest", "backends", "--json"], catch_exceptions=False)
    assert listed.exit_code == 0 and json.loads(listed.output) == list(rows.values())
    with pytest.raises(LookupError):
        load_backend("nope")
    cls = harvester_for(load_backend("listing"))
    assert cls.types == {"listing": "harvest_sources"} and cls.platform == "listing"


def test_a_seed_that_is_not_a_url_is_refused(config, listing_type):
    result = harvest(config, "listing", "not a url")
    assert result.codes() == [codes.BAD_REQUEST] and result.records == []


def test_a_backend_bug_in_listing_ends_that_seed_only(config, listing_type):
    broken = FakeServer({"/list": lambda req: Response(200, b'{"entries": []}')})  # no "items": KeyError
    with broken as bad, _server(_entries(["a", "b"])) as good:
        result = harvest(config, "listing", [bad.url, good.url])
    assert result.codes() == [codes.UNKNOWN_ERROR]
    assert result.final["errors"][0]["seed_id"] == "seed-1" and "KeyError" in result.final["errors"][0]["message"]
    assert set(result.by_status("done")) == {"a", "b"}
    assert {r["harvest"]["source_id"] for r in result.records} == {"seed-2"}


def test_dry_run_waits_out_503_retry_after_itself(config, listing_type):
    server = _server(_entries(["a"]))
    answers = iter([Response(503, b"", headers={"Retry-After": "1"})])
    listing = server.routes["/list"]
    server.routes["/list"] = lambda req: next(answers, None) or listing(req)
    with server:
        result = harvest(config, "listing", server.url, options={"dryrun": True})
        asked = len(server.requests_to("/list"))
    assert asked == 2  # refused once, asked again after Retry-After (the dry run's session does not retry)
    assert result.totals()["done"] == 1 and result.warcs == [] and result.final["errors"] == []


@pytest.mark.parametrize("refusal", [Response(429, b"", headers={"Retry-After": "1"}),
                                     Response(503, b"", headers={"Retry-After": "601"}),  # over the 600 s bound
                                     Response(502, b"")])
def test_dry_run_reports_other_refusals_at_once(config, listing_type, refusal):
    server = _server(_entries(["a"]))
    server.routes["/list"] = lambda req: refusal
    with server:
        result = harvest(config, "listing", server.url, options={"dryrun": True})
        asked = len(server.requests_to("/list"))
    assert asked == 1  # the backend's policy waits only as a 503 asks, and never on its own
    assert result.codes() == [codes.REMOTE_ERROR] and str(refusal.status) in result.final["errors"][0]["message"]
