"""DCAT catalogs in JSON-LD, RDF/XML and Turtle, paged with Hydra, through the real engine on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest

from swath.messages import codes
from tests.backendkit import harvest
from tests.fakes.dcat import JSONLD_CONTEXT, DCATPortal
from tests.fakes.httpserver import FakeServer, Response
from tests.test_export import export, read_rows, run  # noqa: F401 - fixture


def _check_dataset(record: dict, d) -> None:
    ds = record["dataset"]
    assert ds["title"] == d.title
    assert ds["description"] == d.markdown
    assert ds["tags"] == d.tags
    assert ds["frequency"] == d.frequency[1]
    _, _, start, end = d.temporal
    assert ds["temporal_coverage"] == {"start": start, "end": end}
    assert ds["license"] == d.license[1]
    assert ds["extras"]["dct:identifier"] == d.identifier
    assert ds["extras"].get("uri") == (None if d.blank else d.uri)
    resources = {r["url"]: r for r in ds["resources"]}
    csv, api = d.csv, d.api
    assert set(resources) == {csv["url"], api["url"]}
    got = resources[csv["url"]]
    assert (got["title"], got["filesize"], got["mime"], got["format"]) == (
        csv["title"], csv["size"], csv["mime"], "csv")
    assert got["checksum"] == {"type": "sha256", "value": csv["sha256"]}
    assert (got["published"], got["last_modified"]) == (csv["issued"], csv["modified"])
    got = resources[api["url"]]
    assert got["title"] == api["url"].rsplit("/", 1)[-1]  # guessed from the URL
    assert (got["format"], got["mime"]) == (api["format"].lower(), api["mime"])
    assert record["harvest"]["remote_id"] == d.identifier and record["harvest"]["source_id"] == "seed-1"


@pytest.mark.parametrize("syntax", ["jsonld", "rdfxml", "turtle", "turtle-legacy"])
@pytest.mark.parametrize("typed", [True, False], ids=["content-type", "sniffed"])
def test_catalog_pages_are_followed_and_mapped(config, syntax, typed):
    portal = DCATPortal(syntax=syntax, count=11, per_page=4, content_type="" if typed else None)
    with portal.server as server:
        result = harvest(config, "dcat", f"{server.url}/catalog")
        pages = [r.arg("page", "1") for r in server.requests_to("/catalog")]
    assert pages == [str(n) for n in range(1, portal.spec.pages + 1)]
    done = result.by_status("done")
    assert set(done) == {d.identifier for d in portal.spec.datasets}
    assert any(d.blank for d in portal.spec.datasets) and any(d.buggy for d in portal.spec.datasets)
    for d in portal.spec.datasets:
        _check_dataset(done[d.identifier], d)
    assert result.final["status"] == "completed success", result.final["errors"]
    assert result.totals()["done"] == len(portal.spec.datasets)


def test_self_pointing_next_page_is_stopped(config):
    portal = DCATPortal(syntax="jsonld", count=12, per_page=4, loop_at=2)
    with portal.server as server:
        result = harvest(config, "dcat", f"{server.url}/catalog")
        served = len(server.requests_to("/catalog"))
    assert served == 2
    assert result.codes() == [codes.PAGINATION_LOOP]
    assert set(result.by_status("done")) == {d.identifier for d in portal.spec.datasets[:8]}


def test_remote_jsonld_context_is_fetched_through_the_recorded_session(config):
    portal = DCATPortal(syntax="jsonld", count=3, per_page=5)
    import json

    def page(req):
        body = json.loads(portal.writer(portal.spec, 1, f"{portal.server.url}/catalog", None))
        body["@context"] = f"{portal.server.url}/context.jsonld"
        return Response(200, json.dumps(body).encode(), content_type="application/ld+json")

    portal.server.routes["/catalog"] = page
    portal.server.routes["/context.jsonld"] = lambda req: Response(
        200, json.dumps({"@context": JSONLD_CONTEXT}).encode(), content_type="application/ld+json")
    with portal.server as server:
        result = harvest(config, "dcat", f"{server.url}/catalog")
    assert set(result.by_status("done")) == {d.identifier for d in portal.spec.datasets}
    assert any(uri.endswith("/context.jsonld") for uri in result.responses)


def test_blank_dataset_without_identifier_fails_alone(config):
    body = b"""@prefix dcat: <http://www.w3.org/ns/dcat#> . @prefix dct: <http://purl.org/dc/terms/> .
    [] a dcat:Dataset ; dct:title "orphan" .
    <https://data.example.org/d/1> a dcat:Dataset ; dct:title "kept" ."""
    with FakeServer({"/catalog.ttl": lambda req: Response(200, body, content_type="text/plain")}) as server:
        result = harvest(config, "dcat", f"{server.url}/catalog.ttl")
    assert list(result.by_status("done")) == ["https://data.example.org/d/1"]
    assert result.codes() == [codes.ITEM_FAILED] and "blank node" in result.final["errors"][0]["message"]
    assert result.totals()["failed"] == 1


# (identifier, the dataset's own licence element, its distribution's licence elements, the licence expected):
# udata's rule, the dataset's dct:license or dct:rights first, else the first one a distribution names
LICENCE_CASES = [
    ("on-distribution", "", '<dct:license>Licence Ouverte Version 2.0</dct:license>', "lov2"),  # udata's shape
    ("iri-on-distribution", "", '<dct:license rdf:resource="http://creativecommons.org/licenses/by/4.0/"/>',
     "cc-by"),
    ("rights-on-distribution", "", "<dct:rights>Open Database License</dct:rights>", "odc-odbl"),
    ("dataset-wins", '<dct:license rdf:resource="http://creativecommons.org/licenses/by/4.0/"/>',
     "<dct:license>ODbL</dct:license>", "cc-by"),
    ("none-anywhere", "", "<dct:rights>Ask the data owner</dct:rights>", ""),
]


def _licence_catalog(base: str) -> bytes:
    parts = []
    for ident, own, distributed, _ in LICENCE_CASES:
        parts.append(f"""
  <dcat:Dataset rdf:about="{base}/d/{ident}">
    <dct:identifier>{ident}</dct:identifier><dct:title>{ident}</dct:title>{own}
    <dcat:distribution rdf:resource="{base}/d/{ident}/r/1"/>
  </dcat:Dataset>
  <dcat:Distribution rdf:about="{base}/d/{ident}/r/1">
    <dcat:accessURL>{base}/files/{ident}.csv</dcat:accessURL>{distributed}
  </dcat:Distribution>""")
    return f"""<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dcat="http://www.w3.org/ns/dcat#"
         xmlns:dct="http://purl.org/dc/terms/">{"".join(parts)}
</rdf:RDF>""".encode()


def test_a_licence_given_only_on_a_distribution_is_the_datasets(config, run):  # noqa: F811 - the fixture
    """Issue 29: a dataset stating no licence takes the one its distribution states (dct:license, else
    dct:rights), as udata does; harvested, recorded and exported."""
    with FakeServer() as server:
        server.routes["/catalog.rdf"] = lambda req: Response(200, _licence_catalog(server.url),
                                                             content_type="application/rdf+xml")
        result = harvest(config, "dcat", f"{server.url}/catalog.rdf", path="collections/cs-1/c-1")
    assert result.final["status"] == "completed success", result.final["errors"]
    expected = {ident: licence for ident, _, _, licence in LICENCE_CASES}
    assert {rid: r["dataset"]["license"] or "" for rid, r in result.by_status("done").items()} == expected
    status = run(export("dcat", "c-1", format="csv"))
    assert status["status"] == "completed success", status["errors"]
    assert {row["id"]: row["license"] for row in read_rows(Path(status["files"][0]))} == expected
