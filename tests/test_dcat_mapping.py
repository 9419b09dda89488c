"""The small mapping rules on their own: temporal forms, licences, frequencies, HTML -> Markdown, sniffing."""

from __future__ import annotations

import pytest

from swath.harvesters.mapping import rdf, temporal
from swath.harvesters.mapping.markdown import html_to_markdown
from swath.harvesters.mapping.vocab import guess_frequency, guess_license


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
