"""OAI-PMH endpoints over the shared fixtures: sickle's resumptionToken chain and pyoai's mapping.txt."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

from tests.fakes.httpserver import FakeServer, Request, Response

XML = "text/xml; charset=utf-8"
# pyoai's fixtures have no Identify; this one describes the same DSpace with second granularity.
PYOAI_IDENTIFY = b"""<?xml version="1.0" encoding="UTF-8"?>
<OAI-PMH xmlns="http://www.openarchives.org/OAI/2.0/"><responseDate>2004-02-17T13:44:55Z</responseDate>
<request verb="Identify">http://dspace.ubib.eur.nl/oai/</request><Identify>
<repositoryName>EUR DSpace</repositoryName><baseURL>http://dspace.ubib.eur.nl/oai/</baseURL>
<protocolVersion>2.0</protocolVersion><adminEmail>admin@example.org</adminEmail>
<earliestDatestamp>2001-01-01T00:00:00Z</earliestDatestamp><deletedRecord>persistent</deletedRecord>
<granularity>YYYY-MM-DDThh:mm:ssZ</granularity></Identify></OAI-PMH>"""


def _file(directory: Path, name: str) -> bytes:
    path = (directory / name).resolve()
    if path.parent != directory.resolve() or not path.is_file():
        raise FileNotFoundError(name)
    return path.read_bytes()


class SickleEndpoint:
    """`/oai` answering from sickle/ (verb -> <Verb>.xml; a resumptionToken names the next file).

    `overrides` maps a verb (or "from" for incremental requests) to another fixture file name;
    `failures` is a list of (status, headers) answered before the real responses.
    """

    def __init__(self, fixtures_dir: Path, *, overrides: dict[str, str] | None = None,
                 failures: list[tuple[int, dict[str, str]]] | None = None) -> None:
        self.directory = fixtures_dir / "oai-pmh" / "sickle"
        self.overrides = dict(overrides or {})
        self.failures = list(failures or [])
        self.server = FakeServer({"/oai": self.handle})

    def handle(self, req: Request) -> Response:
        if self.failures:
            status, headers = self.failures.pop(0)
            return Response(status, b"busy", headers=headers, content_type="text/plain")
        verb = req.arg("verb") or ""
        token = req.arg("resumptionToken")
        if token:
            name = token
        elif req.arg("from") and "from" in self.overrides:
            name = self.overrides["from"]
        else:
            name = self.overrides.get(verb, f"{verb}.xml")
        try:
            return Response(200, _file(self.directory, name), content_type=XML)
        except FileNotFoundError:
            return Response(200, _file(self.directory, "badResumptionToken.xml" if token else "badArgument.xml"),
                            content_type=XML)


class PyoaiEndpoint:
    """`/oai/` answering by pyoai's mapping.txt (sorted query string -> file); Identify is ours."""

    def __init__(self, fixtures_dir: Path) -> None:
        self.directory = fixtures_dir / "oai-pmh" / "pyoai-fake2"
        lines = (self.directory / "mapping.txt").read_text().split()
        self.mapping = dict(zip(lines[0::2], lines[1::2]))
        self.server = FakeServer({"/oai/": self.handle})

    def handle(self, req: Request) -> Response:
        if req.arg("verb") == "Identify":
            return Response(200, PYOAI_IDENTIFY, content_type=XML)
        query = urlencode(sorted((k, v[0]) for k, v in req.query.items()))
        name = self.mapping.get(query)
        if name is None:
            return Response(200, _file(self.directory.parent / "sickle", "badArgument.xml"), content_type=XML)
        return Response(200, _file(self.directory, name), content_type=XML)
