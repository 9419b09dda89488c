"""Hostile input for the metadata backends: entity bombs, XXE, malformed documents, oversize responses."""

from __future__ import annotations

import dataclasses
import json

import pytest

from swath.harvesters.mapping.errors import BadDocument
from swath.harvesters.mapping.safexml import parse_xml
from swath.messages import codes
from swath.platforms.dcat import rdf
from tests.backendkit import harvest
from tests.fakes.httpserver import FakeServer, Response, end_chunks, write_chunk
from tests.fakes.oai import XML

BOMB = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
<!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
<!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
<!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
<!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
<!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
<!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">]>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>&lol9;</responseDate></OAI-PMH>"""


@pytest.fixture
def secret(tmp_path):
    path = tmp_path / "secret.txt"
    path.write_text("TOP-SECRET-7f3a9c")
    return path


def _xxe_oai(path) -> bytes:
    return f"""<?xml version="1.0"?>
<!DOCTYPE r [<!ENTITY xxe SYSTEM "file://{path}">]>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2020-01-01T00:00:00Z</responseDate>
<request verb="Identify">x</request><Identify><repositoryName>&xxe;</repositoryName>
<granularity>YYYY-MM-DD</granularity></Identify></OAI-PMH>""".encode()


def _xxe_rdf(path) -> bytes:
    return f"""<?xml version="1.0"?>
<!DOCTYPE rdf:RDF [<!ENTITY xxe SYSTEM "file://{path}">]>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dcat="http://www.w3.org/ns/dcat#"
  xmlns:dct="http://purl.org/dc/terms/">
  <dcat:Dataset rdf:about="https://data.example.org/d/1"><dct:title>&xxe;</dct:title></dcat:Dataset>
</rdf:RDF>""".encode()


def test_parse_xml_refuses_bomb_and_xxe(secret):
    with pytest.raises(BadDocument, match="DOCTYPE"):
        parse_xml(BOMB)
    with pytest.raises(BadDocument, match="DOCTYPE"):
        parse_xml(_xxe_oai(secret))
    with pytest.raises(BadDocument):
        rdf.load_graph(_xxe_rdf(secret), fmt=rdf.RDFXML, base="https://x/")
    with pytest.raises(BadDocument, match="malformed"):
        parse_xml(b"<OAI-PMH><unclosed></OAI-PMH>")


@pytest.mark.parametrize("kind", ["bomb", "xxe"])
def test_oai_endpoint_sending_entities_is_refused(config, secret, kind):
    body = BOMB if kind == "bomb" else _xxe_oai(secret)
    with FakeServer({"/oai": lambda req: Response(200, body, content_type=XML)}) as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
    assert result.codes() == [codes.BAD_RESPONSE]
    assert result.records == []
    everything = result.text + json.dumps(result.published).encode()
    assert b"TOP-SECRET" not in everything and b"lollollol" not in everything


@pytest.mark.parametrize("body,content_type", [
    ("xxe-rdf", "application/rdf+xml"),
    (b'{"@context": {"dct": "http://purl.org/dc/terms/"}, "@graph": [{"@id": "x", "dct:title": "cut',
     "application/ld+json"),
    (b'{"@context": "file://SECRET", "@graph": []}', "application/ld+json"),
    (b"@prefix dct: <http://purl.org/dc/terms/> . <a> dct:title ", "text/turtle"),
])
def test_malformed_or_unsafe_catalogs_are_refused(config, secret, body, content_type):
    if body == "xxe-rdf":
        body = _xxe_rdf(secret)
    body = body.replace(b"SECRET", str(secret).encode())
    with FakeServer({"/catalog": lambda req: Response(200, body, content_type=content_type)}) as server:
        result = harvest(config, "dcat", f"{server.url}/catalog")
    assert result.codes() == [codes.BAD_RESPONSE]
    assert result.records == []
    assert b"TOP-SECRET" not in result.text + json.dumps(result.published).encode()


def test_response_past_the_size_limit_is_refused(config):
    config = dataclasses.replace(config, max_response_bytes=256 * 1024)
    total = 200 * 1024 * 1024  # 200 MB offered; only the limit's worth may be read
    chunk = b"<x>" + b"a" * 65530 + b"</x>\n"
    sent = []

    def stream(wfile):
        for _ in range(total // len(chunk)):
            write_chunk(wfile, chunk)
            sent.append(len(chunk))
        end_chunks(wfile)

    with FakeServer({"/oai": lambda req: Response(200, stream, content_type=XML)}) as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
    assert result.codes() == [codes.RESPONSE_TOO_LARGE]
    assert sum(sent) < total  # the client hung up long before the end


def test_dry_run_also_refuses_past_the_size_limit(config):
    config = dataclasses.replace(config, max_response_bytes=128 * 1024)

    def stream(wfile):
        for _ in range(2000):  # 128 MB offered
            write_chunk(wfile, b"a" * 65536)
        end_chunks(wfile)

    with FakeServer({"/oai": lambda req: Response(200, stream, content_type=XML)}) as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai", options={"dryrun": True})
    assert result.codes() == [codes.RESPONSE_TOO_LARGE] and result.warcs == []
