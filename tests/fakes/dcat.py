"""DCAT catalogs shaped like real portals' exports, in JSON-LD, RDF/XML and Turtle, paged with Hydra.

Every dataset is described once in `CatalogSpec.datasets` (plain values, with what the mapping
should make of each) and written by one writer per syntax: JSON-LD like udata's /catalog.jsonld
(PartialCollectionView, nested distributions), RDF/XML like an EU portal (rdf:nodeID blank nodes,
legacy PagedCollection), Turtle like ckanext-dcat ([ ] blank nodes, PagedCollection or view).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from html import escape
from typing import Any

from tests.fakes.httpserver import FakeServer, Request, Response

EU = "http://publications.europa.eu/resource/authority"
IANA = "https://www.iana.org/assignments/media-types"
# (form, value, expected start, expected end): the temporal forms udata recognises
TEMPORALS = [
    ("schema", ("2015-01-01", "2016-12-31"), "2015-01-01", "2016-12-31"),
    ("literal", "2015/2017-06", "2015-01-01", "2017-06-30"),
    ("literal", "2019", "2019-01-01", "2019-12-31"),
    ("literal", "2020-02", "2020-02-01", "2020-02-29"),
    ("govuk", "http://reference.data.gov.uk/id/quarter/2018-Q3", "2018-07-01", "2018-09-30"),
]
FREQUENCIES = [("http://purl.org/cld/freq/daily", "daily"), (f"{EU}/frequency/ANNUAL", "annual"),
               ("http://purl.org/cld/freq/monthly", "monthly")]
LICENSES = [("https://www.etalab.gouv.fr/licence-ouverte-open-licence", "lov2"),
            ("http://creativecommons.org/licenses/by/4.0/", "cc-by"),
            ("http://opendatacommons.org/licenses/odbl/1.0/", "odc-odbl")]


@dataclass
class DatasetSpec:
    n: int
    base: str
    blank: bool = False  # a blank-node dataset (identified by dct:identifier only)

    @property
    def identifier(self) -> str:
        return f"ds-{self.n:04d}"

    @property
    def uri(self) -> str:
        return f"{self.base}/datasets/{self.identifier}"

    @property
    def title(self) -> str:
        return f"Qualité de l'air — station {self.n}"

    @property
    def html(self) -> str:
        return (f'<p>Mesures <strong>horaires</strong> de la station {self.n}, '
                f'voir <a href="{self.base}/s/{self.n}">la fiche</a>.</p>')

    @property
    def markdown(self) -> str:
        return f"Mesures **horaires** de la station {self.n}, voir [la fiche]({self.base}/s/{self.n})."

    @property
    def keywords(self) -> list[str]:
        return ["Air", f"station-{self.n}"]

    theme = f"{EU}/data-theme/ENVI"

    @property
    def tags(self) -> list[str]:
        return ["air", f"station-{self.n}", "envi"]

    @property
    def temporal(self) -> tuple:
        return TEMPORALS[self.n % len(TEMPORALS)]

    @property
    def frequency(self) -> tuple[str, str]:
        return FREQUENCIES[self.n % len(FREQUENCIES)]

    @property
    def license(self) -> tuple[str, str]:
        return LICENSES[self.n % len(LICENSES)]

    @property
    def buggy(self) -> bool:
        """Uses dct:distributions (a common misspelling) instead of dcat:distribution."""
        return self.n % 4 == 3

    @property
    def csv(self) -> dict[str, Any]:
        return {"title": f"Mesures {self.n} (CSV)", "url": f"{self.base}/files/air-{self.n}.csv", "size": 1000 + self.n,
                "mime": "text/csv", "format": "csv", "sha256": f"{self.n:064x}", "issued": "2021-03-04",
                "modified": "2023-05-06T07:08:09"}

    @property
    def api(self) -> dict[str, Any]:
        # no title: the mapping guesses it from the URL
        return {"url": f"{self.base}/api/records-{self.n}.json", "format": "JSON", "mime": "application/json"}


@dataclass
class CatalogSpec:
    base: str
    count: int
    per_page: int
    datasets: list[DatasetSpec] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.datasets = [DatasetSpec(n, self.base, blank=n % 5 == 4) for n in range(1, self.count + 1)]

    @property
    def pages(self) -> int:
        return max(1, -(-self.count // self.per_page))

    def page(self, number: int) -> list[DatasetSpec]:
        return self.datasets[(number - 1) * self.per_page: number * self.per_page]


def _jsonld_dataset(d: DatasetSpec) -> dict[str, Any]:
    kind, value, _, _ = d.temporal
    if kind == "schema":
        temporal: Any = {"@type": "dct:PeriodOfTime", "schema:startDate": value[0], "schema:endDate": value[1]}
    elif kind == "govuk":
        temporal = {"@id": value}
    else:
        temporal = value
    csv, api = d.csv, d.api
    distributions = [
        {"@type": "dcat:Distribution", "dct:title": csv["title"], "dcat:downloadURL": {"@id": csv["url"]},
         "dcat:byteSize": csv["size"], "dcat:mediaType": {"@id": f"{IANA}/{csv['mime']}"},
         "dct:format": {"@id": f"{EU}/file-type/CSV"}, "dct:issued": csv["issued"], "dct:modified": csv["modified"],
         "dct:license": {"@id": d.license[0]},
         "spdx:checksum": {"@type": "spdx:Checksum", "spdx:algorithm": {"@id": "spdx:checksumAlgorithm_sha256"},
                           "spdx:checksumValue": csv["sha256"]}},
        {"@type": "dcat:Distribution", "dcat:accessURL": {"@id": api["url"]}, "dct:format": api["format"],
         "dcat:mediaType": api["mime"]},
    ]
    node = {
        "@type": "dcat:Dataset", "dct:identifier": d.identifier, "dct:title": d.title, "dct:description": d.html,
        "dcat:keyword": d.keywords, "dcat:theme": {"@id": d.theme},
        "dct:accrualPeriodicity": {"@id": d.frequency[0]}, "dct:temporal": temporal,
        ("dct:distributions" if d.buggy else "dcat:distribution"): distributions,
    }
    if not d.blank:
        node["@id"] = d.uri
    return node


JSONLD_CONTEXT = {"dcat": "http://www.w3.org/ns/dcat#", "dct": "http://purl.org/dc/terms/",
                  "hydra": "http://www.w3.org/ns/hydra/core#", "schema": "http://schema.org/",
                  "spdx": "http://spdx.org/rdf/terms#", "xsd": "http://www.w3.org/2001/XMLSchema#"}


def jsonld_page(spec: CatalogSpec, number: int, url: str, next_url: str | None) -> bytes:
    graph: list[dict[str, Any]] = [{"@id": f"{spec.base}/catalog", "@type": "dcat:Catalog", "dct:title": "Portail",
                                    "dcat:dataset": [{"@id": d.uri} for d in spec.page(number) if not d.blank]}]
    graph += [_jsonld_dataset(d) for d in spec.page(number)]
    view = {"@id": url, "@type": "hydra:PartialCollectionView", "hydra:first": {"@id": url.split("?")[0] + "?page=1"}}
    if next_url:
        view["hydra:next"] = {"@id": next_url}
    graph.append(view)
    return json.dumps({"@context": JSONLD_CONTEXT, "@graph": graph}, ensure_ascii=False).encode()


def _xml_temporal(d: DatasetSpec) -> str:
    kind, value, _, _ = d.temporal
    if kind == "schema":
        return (f'<dct:temporal><dct:PeriodOfTime><schema:startDate rdf:datatype="http://www.w3.org/2001/XMLSchema#date">'
                f'{value[0]}</schema:startDate><schema:endDate>{value[1]}</schema:endDate></dct:PeriodOfTime></dct:temporal>')
    if kind == "govuk":
        return f'<dct:temporal rdf:resource="{value}"/>'
    return f"<dct:temporal>{value}</dct:temporal>"


def rdfxml_page(spec: CatalogSpec, number: int, url: str, next_url: str | None) -> bytes:
    parts = []
    for d in spec.page(number):
        csv, api = d.csv, d.api
        about = f'rdf:nodeID="ds{d.n}"' if d.blank else f'rdf:about="{d.uri}"'
        prop = "dct:distributions" if d.buggy else "dcat:distribution"
        parts.append(f"""
  <dcat:Dataset {about}>
    <dct:identifier>{d.identifier}</dct:identifier>
    <dct:title xml:lang="fr">{escape(d.title)}</dct:title>
    <dct:description>{escape(d.html)}</dct:description>
    {''.join(f'<dcat:keyword>{k}</dcat:keyword>' for k in d.keywords)}
    <dcat:theme rdf:resource="{d.theme}"/>
    <dct:accrualPeriodicity rdf:resource="{d.frequency[0]}"/>
    {_xml_temporal(d)}
    <{prop} rdf:nodeID="csv{d.n}"/>
    <{prop}>
      <dcat:Distribution>
        <dcat:accessURL rdf:resource="{api['url']}"/>
        <dct:format>{api['format']}</dct:format>
        <dcat:mediaType>{api['mime']}</dcat:mediaType>
      </dcat:Distribution>
    </{prop}>
  </dcat:Dataset>
  <dcat:Distribution rdf:nodeID="csv{d.n}">
    <dct:title>{escape(csv['title'])}</dct:title>
    <dcat:downloadURL rdf:resource="{csv['url']}"/>
    <dcat:byteSize rdf:datatype="http://www.w3.org/2001/XMLSchema#decimal">{csv['size']}</dcat:byteSize>
    <dcat:mediaType rdf:resource="{IANA}/{csv['mime']}"/>
    <dct:format rdf:resource="{EU}/file-type/CSV"/>
    <dct:issued>{csv['issued']}</dct:issued>
    <dct:modified>{csv['modified']}</dct:modified>
    <dct:license rdf:resource="{d.license[0]}"/>
    <spdx:checksum><spdx:Checksum>
      <spdx:algorithm rdf:resource="http://spdx.org/rdf/terms#checksumAlgorithm_sha256"/>
      <spdx:checksumValue>{csv['sha256']}</spdx:checksumValue>
    </spdx:Checksum></spdx:checksum>
  </dcat:Distribution>""")
    paging = f'<hydra:nextPage rdf:resource="{escape(next_url)}"/>' if next_url else ""
    return f"""<?xml version="1.0" encoding="utf-8"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns:dcat="http://www.w3.org/ns/dcat#"
  xmlns:dct="http://purl.org/dc/terms/" xmlns:hydra="http://www.w3.org/ns/hydra/core#"
  xmlns:schema="http://schema.org/" xmlns:spdx="http://spdx.org/rdf/terms#">
  <dcat:Catalog rdf:about="{spec.base}/catalog"><dct:title>EU-style portal</dct:title></dcat:Catalog>
  <hydra:PagedCollection rdf:about="{escape(url)}">
    <hydra:totalItems rdf:datatype="http://www.w3.org/2001/XMLSchema#integer">{spec.count}</hydra:totalItems>
    <hydra:itemsPerPage rdf:datatype="http://www.w3.org/2001/XMLSchema#integer">{spec.per_page}</hydra:itemsPerPage>
    {paging}
  </hydra:PagedCollection>{''.join(parts)}
</rdf:RDF>""".encode()


def _ttl_temporal(d: DatasetSpec) -> str:
    kind, value, _, _ = d.temporal
    if kind == "schema":
        return (f'[ a dct:PeriodOfTime ; schema:startDate "{value[0]}"^^xsd:date ; '
                f'schema:endDate "{value[1]}"^^xsd:date ]')
    return f"<{value}>" if kind == "govuk" else f'"{value}"'


def turtle_page(spec: CatalogSpec, number: int, url: str, next_url: str | None, *, legacy: bool = False) -> bytes:
    out = ["@prefix dcat: <http://www.w3.org/ns/dcat#> .", "@prefix dct: <http://purl.org/dc/terms/> .",
           "@prefix hydra: <http://www.w3.org/ns/hydra/core#> .", "@prefix schema: <http://schema.org/> .",
           "@prefix spdx: <http://spdx.org/rdf/terms#> .", "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .", ""]
    for d in spec.page(number):
        csv, api = d.csv, d.api
        prop = "dct:distributions" if d.buggy else "dcat:distribution"
        subject = f"_:ds{d.n}" if d.blank else f"<{d.uri}>"
        description = d.html.replace('"', '\\"')
        out.append(f"""{subject} a dcat:Dataset ;
    dct:identifier "{d.identifier}" ;
    dct:title "{d.title}"@fr ;
    dct:description "{description}" ;
    dcat:keyword {', '.join(f'"{k}"' for k in d.keywords)} ;
    dcat:theme <{d.theme}> ;
    dct:accrualPeriodicity <{d.frequency[0]}> ;
    dct:temporal {_ttl_temporal(d)} ;
    {prop} [ a dcat:Distribution ;
        dct:title "{csv['title']}" ;
        dcat:downloadURL <{csv['url']}> ;
        dcat:byteSize "{csv['size']}"^^xsd:decimal ;
        dcat:mediaType <{IANA}/{csv['mime']}> ;
        dct:format <{EU}/file-type/CSV> ;
        dct:issued "{csv['issued']}"^^xsd:date ;
        dct:modified "{csv['modified']}"^^xsd:dateTime ;
        dct:license <{d.license[0]}> ;
        spdx:checksum [ a spdx:Checksum ; spdx:algorithm spdx:checksumAlgorithm_sha256 ;
                        spdx:checksumValue "{csv['sha256']}" ] ] ,
      [ a dcat:Distribution ; dcat:accessURL <{api['url']}> ; dct:format "{api['format']}" ;
        dcat:mediaType "{api['mime']}" ] .
""")
    if legacy:
        next_link = f" ;\n    hydra:nextPage <{next_url}>" if next_url else ""
        out.append(f"<{url}> a hydra:PagedCollection{next_link} .")
    else:
        next_link = f" ;\n    hydra:next <{next_url}>" if next_url else ""
        out.append(f"<{url}> a hydra:PartialCollectionView{next_link} .")
    return "\n".join(out).encode()


WRITERS = {
    "jsonld": (jsonld_page, "application/ld+json"),
    "rdfxml": (rdfxml_page, "application/rdf+xml"),
    "turtle": (turtle_page, "text/turtle"),
    "turtle-legacy": (lambda *a: turtle_page(*a, legacy=True), "text/turtle"),
}


class DCATPortal:
    """`/catalog` serving `spec` page by page (`?page=N`) in one syntax.

    `content_type=None` sends no useful type (application/octet-stream) so the syntax must come from the
    URL or the bytes; `loop_at` makes that page's next link point to itself.
    """

    def __init__(self, *, syntax: str, count: int, per_page: int, path: str = "/catalog",
                 content_type: str | None = "", loop_at: int | None = None) -> None:
        self.syntax, self.path, self.loop_at = syntax, path, loop_at
        self.writer, default_type = WRITERS[syntax]
        self.content_type = default_type if content_type == "" else (content_type or "application/octet-stream")
        self.server = FakeServer({path: self.handle})
        self.spec = CatalogSpec(base="https://data.example.org", count=count, per_page=per_page)

    def handle(self, req: Request) -> Response:
        number = int(req.arg("page", "1"))
        here = f"{self.server.url}{self.path}?page={number}"
        if self.loop_at == number:
            following: str | None = here
        else:
            following = f"{self.server.url}{self.path}?page={number + 1}" if number < self.spec.pages else None
        return Response(200, self.writer(self.spec, number, here, following), content_type=self.content_type)
