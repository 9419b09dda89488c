"""udata's DCAT field mapping: every dcat:Dataset of a graph to a Dataset record, plus Hydra paging."""

from __future__ import annotations

from collections.abc import Iterator

from rdflib import Graph, Literal, URIRef
from rdflib.namespace import FOAF, RDF, RDFS, SKOS, Namespace

from swath.harvesters.mapping import temporal
from swath.harvesters.mapping.dataset import Checksum, Dataset, Resource, add_tags, title_from
from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.markdown import html_to_markdown
from swath.harvesters.mapping.vocab import guess_frequency, guess_license

# Open namespaces: rdflib's closed DCTERMS/DCAT refuse the misspellings real catalogs use.
DCTERMS = Namespace("http://purl.org/dc/terms/")
DCAT = Namespace("http://www.w3.org/ns/dcat#")
HYDRA = Namespace("http://www.w3.org/ns/hydra/core#")
SCHEMA = Namespace("http://schema.org/")
SCHEMA_S = Namespace("https://schema.org/")
SPDX = Namespace("http://spdx.org/rdf/terms#")
IANA_MEDIA = ("https://www.iana.org/assignments/media-types/", "http://www.iana.org/assignments/media-types/")
DISTRIBUTIONS = (DCAT.distribution, DCTERMS.distribution, DCTERMS.distributions)  # the last one is a common bug


def _text(graph: Graph, node, *predicates) -> str | None:
    for predicate in predicates:
        for value in graph.objects(node, predicate):
            text = _label(graph, value)
            if text:
                return text
    return None


def _label(graph: Graph, value) -> str | None:
    """A literal's text; a resource's label (skos/rdfs/dct:title/rdf:value) or, for an IRI, the IRI."""
    if isinstance(value, Literal):
        return str(value).strip() or None
    for predicate in (SKOS.prefLabel, RDFS.label, DCTERMS.title, RDF.value):
        label = graph.value(value, predicate)
        if isinstance(label, Literal) and str(label).strip():
            return str(label).strip()
    return str(value) if isinstance(value, URIRef) else None


def _theme(graph: Graph, value) -> str:
    """A theme's label, else the last segment of its IRI (EU data-theme IRIs end with e.g. ENVI)."""
    label = _label(graph, value)
    if label and label == str(value) and isinstance(value, URIRef):
        return label.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    return label or ""


def next_page(graph: Graph) -> str | None:
    """hydra:next of a PartialCollectionView, else hydra:nextPage of a legacy PagedCollection."""
    for view in graph.subjects(RDF.type, HYDRA.PartialCollectionView):
        target = graph.value(view, HYDRA.next)
        if target is not None:
            return str(target)
    for collection in graph.subjects(RDF.type, HYDRA.PagedCollection):
        target = graph.value(collection, HYDRA.nextPage)
        if target is not None:
            return str(target)
    return None


def dataset_nodes(graph: Graph) -> Iterator:
    """The dcat:Dataset subjects, in a stable order (IRIs sorted, then blank nodes)."""
    nodes = set(graph.subjects(RDF.type, DCAT.Dataset))
    yield from sorted((n for n in nodes if isinstance(n, URIRef)), key=str)
    yield from sorted((n for n in nodes if not isinstance(n, URIRef)), key=str)


def remote_id(graph: Graph, node) -> str:
    """dct:identifier, else the dataset's IRI; a blank node without identifier cannot be tracked."""
    identifier = _text(graph, node, DCTERMS.identifier)
    if identifier:
        return identifier
    if isinstance(node, URIRef):
        return str(node)
    raise MetadataError("dcat:Dataset is a blank node without dct:identifier")


def _temporal(graph: Graph, node):
    for value in graph.objects(node, DCTERMS.temporal):
        if isinstance(value, Literal):
            found = temporal.from_literal(str(value))
        else:
            start = _text(graph, value, SCHEMA.startDate, SCHEMA_S.startDate, DCAT.startDate)
            end = _text(graph, value, SCHEMA.endDate, SCHEMA_S.endDate, DCAT.endDate)
            found = temporal.from_range(start, end)
            if found is None and isinstance(value, URIRef):
                found = temporal.from_govuk(str(value))
        if found:
            return found
    return None


def _mime(graph: Graph, node) -> str | None:
    value = _text(graph, node, DCAT.mediaType)
    if value:
        for prefix in IANA_MEDIA:
            if value.startswith(prefix):
                return value[len(prefix):]
    return value


def _format(graph: Graph, node) -> str | None:
    value = _text(graph, node, DCTERMS["format"])
    if value and "/" in value and value.startswith("http"):
        value = value.rstrip("/").rsplit("/", 1)[-1]  # EU file-type authority IRIs end with the format
    return value.lower() if value else None


def _checksum(graph: Graph, node) -> Checksum | None:
    checksum = graph.value(node, SPDX.checksum)
    if checksum is None:
        return None
    value = _text(graph, checksum, SPDX.checksumValue)
    algorithm = graph.value(checksum, SPDX.algorithm)
    if not value or algorithm is None:
        return None
    name = str(algorithm).rsplit("checksumAlgorithm_", 1)[-1].rsplit("/", 1)[-1].rsplit("#", 1)[-1]
    return Checksum(type=name.lower(), value=value)


def _size(graph: Graph, node) -> int | None:
    value = graph.value(node, DCAT.byteSize)
    try:
        return int(float(str(value))) if value is not None else None
    except ValueError:
        return None


def map_resource(graph: Graph, node) -> Resource:
    url = _text(graph, node, DCAT.downloadURL, DCAT.accessURL)
    fmt = _format(graph, node)
    description = _text(graph, node, DCTERMS.description)
    return Resource(
        title=_text(graph, node, DCTERMS.title) or title_from(url, fmt),
        description=html_to_markdown(description) if description else None,
        url=url,
        published=_text(graph, node, DCTERMS.issued),
        last_modified=_text(graph, node, DCTERMS.modified),
        format=fmt,
        mime=_mime(graph, node),
        filesize=_size(graph, node),
        checksum=_checksum(graph, node),
    )


def _license(graph: Graph, node, distributions: list) -> str | None:
    candidates = []
    for subject in [node, *distributions]:
        for predicate in (DCTERMS.license, DCTERMS.rights):
            for value in graph.objects(subject, predicate):
                candidates.append(str(value))
                label = _label(graph, value)
                if label and label != str(value):
                    candidates.append(label)
    return guess_license(candidates)


def map_dataset(graph: Graph, node) -> Dataset:
    """udata's dcat:Dataset -> Dataset mapping (see docs/metadata-harvesting.md for the table)."""
    distributions = sorted({d for p in DISTRIBUTIONS for d in graph.objects(node, p)}, key=str)
    description = _text(graph, node, DCTERMS.description)
    tags: list[str] = []
    add_tags(tags, [str(k) for k in graph.objects(node, DCAT.keyword)])
    add_tags(tags, [str(k) for k in graph.objects(node, DCTERMS.keyword)])  # seen in the wild; udata's table says dct
    add_tags(tags, [_theme(graph, t) for p in (DCAT.theme, DCTERMS.theme) for t in graph.objects(node, p)])
    extras = {}
    identifier = _text(graph, node, DCTERMS.identifier)
    if identifier:
        extras["dct:identifier"] = identifier
    if isinstance(node, URIRef):
        extras["uri"] = str(node)
    landing = _text(graph, node, DCAT.landingPage, FOAF.homepage)
    if landing:
        extras["remote_url"] = landing
    return Dataset(
        remote_id=remote_id(graph, node),
        title=_text(graph, node, DCTERMS.title),
        description=html_to_markdown(description) if description else None,
        tags=tags,
        frequency=guess_frequency(_text(graph, node, DCTERMS.accrualPeriodicity)),
        temporal_coverage=_temporal(graph, node),
        license=_license(graph, node, distributions),
        created_at=_text(graph, node, DCTERMS.issued),
        last_modified=_text(graph, node, DCTERMS.modified),
        resources=[map_resource(graph, d) for d in distributions if not isinstance(d, Literal)],
        extras=extras,
    )
