"""Hostile input for the metadata backends: entity bombs, XXE, malformed documents, oversize responses."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import zlib
from pathlib import Path

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


def _gzip_bomb(decoded: int) -> bytes:
    """A well-formed OAI-PMH answer padded with `decoded` bytes of spaces, gzipped (about 1,000 to 1)."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    head = b'<?xml version="1.0"?><OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/">'
    parts = [packer.compress(head)] + [packer.compress(b" " * (1 << 20)) for _ in range(decoded >> 20)]
    return b"".join([*parts, packer.compress(b"</OAI-PMH>"), packer.flush()])


# Run in a child so its peak memory is its own: the bomb, the harvest, then the peak resident size grown.
_BOMB_CHILD = """
import dataclasses, json, pathlib, sys
from swath.core.config import Config
from tests.backendkit import harvest
from tests.fakes.httpserver import FakeServer, Response
from tests.fakes.oai import XML
from tests.test_backends_safety import _gzip_bomb

def peak():
    line = next(l for l in pathlib.Path("/proc/self/status").read_text().splitlines() if l.startswith("VmHWM:"))
    return int(line.split()[1]) * 1024

config = dataclasses.replace(Config.from_env({}), data_root=pathlib.Path(sys.argv[1]), max_response_bytes=1 << 20)
bomb = _gzip_bomb(int(sys.argv[2]))
with FakeServer({"/oai": lambda req: Response(200, bomb, headers={"Content-Encoding": "gzip"},
                                              content_type=XML)}) as server:
    before = peak()
    result = harvest(config, "oai_pmh", f"{server.url}/oai", options={"dryrun": sys.argv[3] == "dry"})
print(json.dumps({"codes": result.codes(), "records": len(result.records), "grew": peak() - before,
                  "sent": len(bomb)}))
"""


@pytest.mark.parametrize("dry_run", [
    pytest.param(False, marks=pytest.mark.xfail(strict=True, reason=(
        "harvesters/http.py GuardedAdapter._with_body hands an encoded body to requests, which inflates it whole "
        "(Session.send reads .content); left to the helper editing http.py (docs/security.md)"))),
    True], ids=["recorded", "dry run"])
def test_a_gzip_bomb_is_decoded_only_up_to_the_size_limit(data_root, dry_run):
    # 256 KiB on the wire, 256 MiB decoded: under the 1 MiB limit as sent, far past it decoded (100 MiB: 100 GiB)
    decoded = 256 << 20
    done = subprocess.run([sys.executable, "-c", _BOMB_CHILD, str(data_root), str(decoded),
                           "dry" if dry_run else "recorded"], capture_output=True, text=True, timeout=600,
                          cwd=Path(__file__).resolve().parents[1])
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.splitlines()[-1])
    assert got["sent"] < 1 << 20
    assert (got["codes"], got["records"]) == ([codes.RESPONSE_TOO_LARGE], 0)
    assert got["grew"] < decoded // 4  # never the decoded size: a few times the limit at most


def test_dry_run_also_refuses_past_the_size_limit(config):
    config = dataclasses.replace(config, max_response_bytes=128 * 1024)

    def stream(wfile):
        for _ in range(2000):  # 128 MB offered
            write_chunk(wfile, b"a" * 65536)
        end_chunks(wfile)

    with FakeServer({"/oai": lambda req: Response(200, stream, content_type=XML)}) as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai", options={"dryrun": True})
    assert result.codes() == [codes.RESPONSE_TOO_LARGE] and result.warcs == []
