"""The small mapping rules on their own: temporal forms, licences, frequencies, HTML -> Markdown, sniffing."""

from __future__ import annotations

from pathlib import Path

import pytest

from swath.harvesters.mapping import lang, temporal
from swath.harvesters.mapping.markdown import html_to_markdown
from swath.harvesters.mapping.vocab import guess_frequency, guess_license
from swath.platforms.dcat import mapping, rdf


@pytest.mark.parametrize("text,start,end", [
    ("2015/2017-06", "2015-01-01", "2017-06-30"),
    ("2015-03-04/2015-03-09", "2015-03-04", "2015-03-09"),
    ("2019", "2019-01-01", "2019-12-31"),
    ("2020-02", "2020-02-01", "2020-02-29"),
    ("2021-02", "2021-02-01", "2021-02-28"),
    ("2010-01-01T00:00:00Z/2011-12-31T23:59:59Z", "2010-01-01", "2011-12-31"),
])
def test_temporal_literals(text, start, end):
    assert temporal.from_literal(text).__dict__ == {"start": start, "end": end}


@pytest.mark.parametrize("text", ["", "soon", "2019/", "2019-13", "2020/2019"])
def test_temporal_literals_not_understood(text):
    assert temporal.from_literal(text) is None


@pytest.mark.parametrize("uri,start,end", [
    ("http://reference.data.gov.uk/id/year/2017", "2017-01-01", "2017-12-31"),
    ("http://reference.data.gov.uk/id/month/2016-02", "2016-02-01", "2016-02-29"),
    ("http://reference.data.gov.uk/id/day/2016-02-03", "2016-02-03", "2016-02-03"),
    ("http://reference.data.gov.uk/id/quarter/2018-Q4", "2018-10-01", "2018-12-31"),
    ("http://reference.data.gov.uk/id/half/2018-H1", "2018-01-01", "2018-06-30"),
    ("http://reference.data.gov.uk/id/gregorian-interval/2011-01-01T00:00:00/P3Y", "2011-01-01", "2013-12-31"),
    ("http://reference.data.gov.uk/id/gregorian-interval/2012-04-01T00:00:00/P6M", "2012-04-01", "2012-09-30"),
])
def test_govuk_intervals_are_read_from_the_uri(uri, start, end):
    assert temporal.from_govuk(uri).__dict__ == {"start": start, "end": end}


def test_open_ended_range():
    assert temporal.from_range("2001-05", None).__dict__ == {"start": "2001-05-01", "end": None}
    assert temporal.from_range(None, "2001") is None


@pytest.mark.parametrize("candidates,expected", [
    (["https://www.etalab.gouv.fr/licence-ouverte-open-licence/"], "lov2"),
    (["http://creativecommons.org/licenses/by-sa/4.0/"], "cc-by-sa"),
    (["https://creativecommons.org/publicdomain/zero/1.0/"], "cc-zero"),
    (["Some custom terms", "ODbL"], "odc-odbl"),  # the first *match* wins, not the first candidate
    (["http://example.org/terms", ""], None),
])
def test_license_guess(candidates, expected):
    assert guess_license(candidates) == expected


@pytest.mark.parametrize("value,expected", [
    ("http://purl.org/cld/freq/daily", "daily"),
    ("http://publications.europa.eu/resource/authority/frequency/ANNUAL", "annual"),
    ("http://publications.europa.eu/resource/authority/frequency/UPDATE_CONT", "continuous"),
    ("weekly", "weekly"),
    ("whenever", None),
    (None, None),
])
def test_frequency_guess(value, expected):
    assert guess_frequency(value) == expected


def test_html_to_markdown():
    html = ('<h2>Contenu</h2><p>Les <b>données</b> <em>ouvertes</em> : <a href="https://x.org/a">lien</a>'
            "<br>suite</p><ul><li>un</li><li>deux</li></ul><ol><li>premier</li></ol><script>alert(1)</script>")
    assert html_to_markdown(html) == ("## Contenu\n\nLes **données** *ouvertes* : [lien](https://x.org/a)\nsuite\n\n"
                                      "- un\n- deux\n\n1. premier")
    assert html_to_markdown("  plain < text  ") == "plain < text"


@pytest.mark.parametrize("data,content_type,url,expected", [
    (b"{}", "application/ld+json; charset=utf-8", None, rdf.JSONLD),
    (b"<x/>", "text/turtle", None, rdf.TURTLE),  # the Content-Type wins over the bytes
    (b"...", "application/octet-stream", "https://x.org/catalog.rdf?page=2", rdf.RDFXML),
    (b"...", None, "https://x.org/catalog.ttl", rdf.TURTLE),
    (b"\xef\xbb\xbf  [{}]", None, "https://x.org/catalog", rdf.JSONLD),
    (b'<?xml version="1.0"?><rdf:RDF/>', None, None, rdf.RDFXML),
    (b"<rdf:RDF xmlns:rdf='x'/>", None, None, rdf.RDFXML),
    (b"<https://x.org/d/1> a <http://www.w3.org/ns/dcat#Dataset> .", None, None, rdf.TURTLE),
    (b"@prefix dcat: <http://www.w3.org/ns/dcat#> .", None, None, rdf.TURTLE),
])
def test_format_detection(data, content_type, url, expected):
    assert rdf.detect_format(data, content_type=content_type, url=url) == expected


# --- udata's and ckanext-dcat's own catalog files and expectations (tests/data/README.md) ---------------

DATA = Path(__file__).parent / "data"


def _mapped(name: str, fmt: str, **kwargs) -> dict[str, dict]:
    path = DATA / name
    graph = rdf.load_graph(path.read_bytes(), fmt=fmt, base="http://data.test.org/")
    return {ds.extras["dct:identifier"]: ds.to_dict() for ds in map(lambda n: mapping.map_dataset(graph, n, **kwargs),
                                                                    mapping.dataset_nodes(graph))}


def test_udata_catalog_xml_meets_udatas_own_expectations():
    """udata/harvest/tests/test_dcat_backend.py::test_xml_catalog, assertion by assertion (the ones on
    fields swath maps; contact points and spatial are not mapped)."""
    datasets = _mapped("udata/catalog.xml", rdf.RDFXML)
    assert len(datasets) == 4  # `len(job.items) == 4`

    ds3 = datasets["3"]
    assert ds3["license"] is None  # INSPIRE art. 13(1)(e) access rights: restricted, so no licence
    assert ds3["extras"]["access_type"] == "restricted"
    assert ds3["extras"]["dcat"]["license"] == ["Licence Ouverte Version 2.0"]  # the raw licence is kept
    assert ds3["extras"]["remote_url"] == "http://data.test.org/datasets/3"
    assert ds3["remote_id"] == "3"
    assert ds3["extras"]["dct:issued"].startswith("2016-12-14")
    assert ds3["created_at"].startswith("2016-12-12")
    assert ds3["last_modified"].startswith("2016-12-14")
    assert ds3["frequency"] == "daily"
    assert ds3["description"] == "Dataset 3 description"
    assert ds3["temporal_coverage"] == {"start": "2016-01-01", "end": "2016-12-05"}
    assert ds3["extras"]["dcat"]["accessRights"] == [
        "http://inspire.ec.europa.eu/metadata-codelist/LimitationsOnPublicAccess/INSPIRE_Directive_Article13_1e"]
    assert ds3["extras"]["dcat"]["provenance"] == ["Description de la provenance des données du dataset 3"]
    assert "observation-de-la-terre-et-environnement" in ds3["tags"]
    assert "hvd" in ds3["tags"]

    ds1 = datasets["1"]
    assert ds1["description"] == "# h1 title\n\n## h2 title\n\n**and bold text**"  # dct:abstract, HTML
    assert ds1["temporal_coverage"] == {"start": "2016-01-01", "end": "2016-12-05"}
    assert ds1["frequency"] is None
    # udata's fixture registers "Licence Ouverte Version 1.0" as `lov1`; its data.gouv.fr id is fr-lo
    assert ds1["license"] == "fr-lo"
    assert ds1["extras"]["dcat"]["provenance"] == ["Description de la provenance des données du dataset 1"]
    assert len(ds1["resources"]) == 4
    res = {r["title"]: r for r in ds1["resources"]}
    r1 = res["Resource 1-1"]
    assert (r1["format"], r1["mime"], r1["filesize"], r1["description"]) == (
        "json", "application/json", 12323, "A JSON resource")
    assert (r1["url"], r1["type"]) == ("http://data.test.org/datasets/1/resources/1/file.json", "main")
    assert (r1["published"][:10], r1["last_modified"][:10]) == ("2018-03-12", "2018-03-14")
    r2 = res["Resource 1-2"]
    assert (r2["format"], r2["description"], r2["type"]) == ("json", "A JSON resource", "main")
    assert r2["url"] == "http://data.test.org/datasets/1/resources/2/file.json"
    r3 = res["Resource 1-3"]  # the dct:hasPart document
    assert (r3["format"], r3["description"], r3["type"]) == ("json", None, "other")
    assert r3["url"] == "http://data.test.org/datasets/1/resources/3"
    r4 = res["Resource 1-4"]
    assert (r4["format"], r4["type"]) == (None, "api")
    assert r4["description"] == "A resource pointing towards a Geo Service"
    assert r4["url"] == ("http://data.test.org/datasets/1/resources/4/services"
                         "?SERVICE=WMS&REQUEST=GetCapabilities&VERSION=1.3.0")

    ds2 = datasets["2"]
    assert ds2["license"] == "lov2"  # dct:rights "Licence Ouverte Version 2.0"
    assert ds2["extras"]["dcat"]["rights"] == ["Licence Ouverte Version 2.0"]
    r22 = next(r for r in ds2["resources"] if r["title"] == "Resource 2-2")
    assert r22["extras"]["dcat"]["rights"] == ["Rights on nested resource"]

    ds4 = datasets["4"]
    assert ds4["extras"].get("dcat", {}).get("accessRights") is None  # resources' rights do not bubble up
    for resource in ds4["resources"]:
        assert len(resource["extras"]["dcat"]["accessRights"]) == 2
        assert "Access right 4" in resource["extras"]["dcat"]["accessRights"]


def test_ckanext_dcat_multilingual_dataset_meets_its_expectations():
    """ckanext-dcat's test_multilingual_support.py::test_e2e_dcat_to_ckan: English chosen, every language kept."""
    datasets = _mapped("ckanext-dcat/dataset_multilingual.ttl", rdf.TURTLE)
    ds = datasets["0112cf32-bce0-4071-9504-923375f9f2ad"]
    assert ds["title"] == "Test DCAT dataset"
    assert ds["extras"]["translations"]["title"] == {
        "en": "Test DCAT dataset", "ca": "Conjunt de dades de prova DCAT", "es": "Conjunto de datos de prueba DCAT"}
    assert ds["description"] == "Some description"
    assert ds["extras"]["translations"]["description"] == {
        "en": "Some description", "ca": "Una descripció qualsevol", "es": "Una descripción cualquiera"}
    tags = ds["extras"]["translations"]["tags"]
    assert (sorted(tags["en"]), sorted(tags["ca"]), sorted(tags["es"])) == (
        ["Oaks", "Pines"], ["Pins", "Roures"], ["Pinos", "Robles"])
    assert sorted(ds["tags"]) == ["oaks", "pines"]  # the chosen language's keywords only
    resource = ds["resources"][0]
    assert resource["title"] == "Resource 1" and resource["description"] == "Some description"
    assert resource["extras"]["translations"]["title"] == {"en": "Resource 1", "ca": "Recurs 1", "es": "Recurso 1"}
    assert resource["extras"]["translations"]["description"]["ca"] == "Una descripció qualsevol"
    assert resource["extras"]["dcat"]["rights"] == ["Some stament about rights"]  # the English label


def test_the_language_option_picks_another_language():
    ds = _mapped("ckanext-dcat/dataset_multilingual.ttl", rdf.TURTLE, language="ca")[
        "0112cf32-bce0-4071-9504-923375f9f2ad"]
    assert (ds["title"], ds["description"]) == ("Conjunt de dades de prova DCAT", "Una descripció qualsevol")
    assert sorted(ds["tags"]) == ["pins", "roures"]
    # a language the file lacks: no untagged literal either, so the first by language tag (ca)
    ds = _mapped("ckanext-dcat/dataset_multilingual.ttl", rdf.TURTLE, language="de")[
        "0112cf32-bce0-4071-9504-923375f9f2ad"]
    assert ds["title"] == "Conjunt de dades de prova DCAT"


@pytest.mark.parametrize("values,want,expected", [
    ([("ca", "a"), ("en-gb", "b"), (None, "c")], "en", "b"),   # the wanted language, a subtag too
    ([("ca", "a"), (None, "c"), ("es", "d")], "en", "c"),      # else the untagged literal
    ([("es", "d"), ("ca", "a")], "en", "a"),                   # else the first by language tag
    ([], "en", None),
])
def test_language_preference(values, want, expected):
    assert lang.choose(values, want) == expected


@pytest.mark.parametrize("candidates,expected", [
    (["Licence Ouverte Version 2.0"], "lov2"),
    (["Licence Ouverte version 2.0  https://www.etalab.gouv.fr/wp-content/uploads/2017/04/"
      "ETALAB-Licence-Ouverte-v2.0.pdf"], "lov2"),
    (["https://spdx.org/licenses/etalab-2.0.html"], "lov2"),
    (["http://publications.europa.eu/resource/authority/licence/CC_BY_4_0"], "cc-by"),
    (["Licence Ouverte Version 1.0"], "fr-lo"),
])
def test_licence_names_and_iris(candidates, expected):
    assert guess_license(candidates) == expected
