"""OAI-PMH endpoints over the shared fixtures: sickle's resumptionToken chain and pyoai's mapping.txt."""

from __future__ import annotations

import threading
from pathlib import Path
from urllib.parse import urlencode

from tests.fakes.httpserver import FakeServer, Request, Response

XML = "text/xml; charset=utf-8"
OAI = "http://www.openarchives.org/OAI/2.0/"
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


class GeneratedRepository:
    """`/oai` over `count` generated oai_dc records, `per_page` a page, resumptionToken `page-<n>`.

    Every `deleted_every`-th record has a deleted header. `gate_after`: pages after this one wait for
    `gate` to be set before answering (a harvest held mid-listing, however fast it runs).
    """

    def __init__(self, *, count: int, per_page: int, deleted_every: int = 0, gate_after: int | None = None,
                 deleted_policy: str = "persistent") -> None:
        self.count, self.per_page, self.deleted_every = count, per_page, deleted_every
        self.gate_after, self.gate = gate_after, threading.Event()
        self.deleted_policy = deleted_policy
        self.waiting = threading.Event()  # a request is held at the gate
        self.pages_served: list[int] = []
        self.server = FakeServer({"/oai": self.handle})

    def identifier(self, n: int) -> str:
        return f"oai:gen.example.org:{n:06d}"

    def is_deleted(self, n: int) -> bool:
        return bool(self.deleted_every) and n % self.deleted_every == 0

    def handle(self, req: Request) -> Response:
        verb = req.arg("verb")
        head = f'<?xml version="1.0"?><OAI-PMH xmlns="{OAI}"><responseDate>2024-05-06T07:08:09Z</responseDate>'
        if verb == "Identify":
            body = (f"<Identify><repositoryName>gen</repositoryName><baseURL>{req.path}</baseURL>"
                    "<protocolVersion>2.0</protocolVersion><earliestDatestamp>2020-01-01T00:00:00Z"
                    f"</earliestDatestamp><deletedRecord>{self.deleted_policy}</deletedRecord>"
                    "<granularity>YYYY-MM-DDThh:mm:ssZ</granularity></Identify>")
            return Response(200, (head + body + "</OAI-PMH>").encode(), content_type=XML)
        token = req.arg("resumptionToken")
        page = int(token.split("-")[1]) if token else 1
        if self.gate_after is not None and page > self.gate_after:
            self.waiting.set()
            self.gate.wait(240)
        self.pages_served.append(page)
        first = (page - 1) * self.per_page + 1
        records = "".join(self._record(n) for n in range(first, min(first + self.per_page, self.count + 1)))
        last = first + self.per_page > self.count
        next_token = "" if last else f"page-{page + 1}"
        body = (f'<ListRecords>{records}<resumptionToken completeListSize="{self.count}">{next_token}'
                "</resumptionToken></ListRecords>")
        return Response(200, (head + body + "</OAI-PMH>").encode(), content_type=XML)

    def _record(self, n: int) -> str:
        status = ' status="deleted"' if self.is_deleted(n) else ""
        header = (f"<header{status}><identifier>{self.identifier(n)}</identifier>"
                  "<datestamp>2024-01-01T00:00:00Z</datestamp></header>")
        if status:
            return f"<record>{header}</record>"
        dc = (f'<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" '
              f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Record {n}</dc:title>'
              f"<dc:identifier>https://gen.example.org/records/{n}</dc:identifier></oai_dc:dc>")
        return f"<record>{header}<metadata>{dc}</metadata></record>"
