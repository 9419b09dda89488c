"""udata's DCAT field mapping: every dcat:Dataset of a graph to a Dataset record, plus Hydra paging."""

from __future__ import annotations

from collections.abc import Iterator

from rdflib import Graph, Literal, URIRef
from rdflib.namespace import FOAF, RDF, RDFS, SKOS, Namespace

from swath.harvesters.mapping import lang, temporal
from swath.harvesters.mapping.dataset import Checksum, Dataset, Resource, add_tags, title_from
from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.markdown import html_to_markdown
from swath.harvesters.mapping.vocab import (
    HVD_CATEGORIES,
    HVD_TAG,
    guess_frequency,
    guess_license,
    inspire_restricted,
    slug_tag,
)

# Open namespaces: rdflib's closed DCTERMS/DCAT refuse the misspellings real catalogs use.
DCTERMS = Namespace("http://purl.org/dc/terms/")
DCAT = Namespace("http://www.w3.org/ns/dcat#")
HYDRA = Namespace("http://www.w3.org/ns/hydra/core#")
SCHEMA = Namespace("http://schema.org/")
SCHEMA_S = Namespace("https://schema.org/")
SPDX = Namespace("http://spdx.org/rdf/terms#")
IANA_MEDIA = ("https://www.iana.org/assignments/media-types/", "http://www.iana.org/assignments/media-types/")
DISTRIBUTIONS = (DCAT.distribution, DCTERMS.distribution, DCTERMS.distributions)  # the last one is a common bug


def _values(graph: Graph, node, *predicates, want: str = lang.DEFAULT_LANGUAGE) -> list[lang.Tagged]:
    """(language, text) of the first predicate that has any: literals as they are, resources by label."""
    for predicate in predicates:
        found: list[lang.Tagged] = []
        for value in graph.objects(node, predicate):
            if isinstance(value, Literal):
                if str(value).strip():
                    found.append((value.language.lower() if value.language else None, str(value).strip()))
            else:
                label = _label(graph, value, want)
                if label:
                    found.append((None, label))
        if found:
            return found
    return []


def _text(graph: Graph, node, *predicates, want: str = lang.DEFAULT_LANGUAGE) -> str | None:
    """One value, by the language preference of harvesters/mapping/lang.py."""
    return lang.choose(_values(graph, node, *predicates, want=want), want)


def _label(graph: Graph, value, want: str = lang.DEFAULT_LANGUAGE) -> str | None:
    """A literal's text; a resource's label (skos/rdfs/dct:title/rdf:value) or, for an IRI, the IRI."""
    if isinstance(value, Literal):
        return str(value).strip() or None
    for predicate in (SKOS.prefLabel, RDFS.label, DCTERMS.title, RDF.value):
        labels = [(v.language.lower() if v.language else None, str(v).strip())
                  for v in graph.objects(value, predicate) if isinstance(v, Literal) and str(v).strip()]
        if labels:
            return lang.choose(labels, want)
    return str(value) if isinstance(value, URIRef) else None


def _unwrapped(graph: Graph, node, *predicates, want: str = lang.DEFAULT_LANGUAGE) -> list[str]:
    """udata's rdf_unique_values: every value, a statement node by its rdfs:label or dct:description."""
    out: list[str] = []
    for predicate in predicates:
        for value in graph.objects(node, predicate):
            if isinstance(value, Literal):
                text = str(value).strip()
            else:
                text = _text(graph, value, RDFS.label, DCTERMS.description, want=want) or (
                    str(value) if isinstance(value, URIRef) else "")
            if text and text not in out:
                out.append(text)
    return out


def _theme_tags(graph: Graph, value, want: str) -> list[str]:
    """A theme's label, else the last segment of its IRI (EU data-theme IRIs end with e.g. ENVI); an EU
    high-value-dataset category gives udata's `hvd` tag and its derived theme (udata's slug of the label)."""
    if isinstance(value, URIRef) and str(value) in HVD_CATEGORIES:
        return [HVD_TAG, slug_tag(HVD_CATEGORIES[str(value)])]
    label = _label(graph, value, want)
    if label and label == str(value) and isinstance(value, URIRef):
        return [label.rstrip("/").rsplit("/", 1)[-1].rsplit("#", 1)[-1]]
    return [label] if label else []


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


def _dcat_extras(graph: Graph, node, want: str, *names: str) -> dict[str, list[str]]:
    """udata's extras["dcat"]: the raw rights, access rights, licences, provenance (kept whatever is guessed)."""
    predicates = {"accessRights": (DCTERMS.accessRights, DCAT.accessRights),  # dcat: is a common misspelling
                  "rights": (DCTERMS.rights,), "license": (DCTERMS.license,), "provenance": (DCTERMS.provenance,)}
    found = {name: _unwrapped(graph, node, *predicates[name], want=want) for name in names}
    return {name: values for name, values in found.items() if values}


def _translated(graph: Graph, node, fields: dict[str, tuple], want: str) -> dict[str, dict[str, str]]:
    """field -> {language: text} for the fields given in two languages or more (the others are kept here)."""
    out = {}
    for name, predicates in fields.items():
        translations = lang.translations(_values(graph, node, *predicates, want=want))
        if translations:
            out[name] = translations
    return out


def map_resource(graph: Graph, node, *, want: str = lang.DEFAULT_LANGUAGE, part: bool = False) -> Resource | None:
    """A distribution; `part`: a dct:hasPart document (udata's type `other`, its IRI is the URL)."""
    if part:
        url = str(node) if isinstance(node, URIRef) else None
    else:
        url = _text(graph, node, DCAT.downloadURL, DCAT.accessURL)
    if not url:
        return None  # udata creates no resource without a URL
    fmt = _format(graph, node)
    description = _text(graph, node, DCTERMS.description, want=want)
    extras: dict = dict(translations=_translated(graph, node, {"title": (DCTERMS.title,),
                                                               "description": (DCTERMS.description,)}, want),
                        dcat=_dcat_extras(graph, node, want, "accessRights", "license", "rights"))
    return Resource(
        title=_text(graph, node, DCTERMS.title, want=want) or title_from(url, fmt),
        description=html_to_markdown(description) if description else None,
        url=url,
        published=_text(graph, node, DCTERMS.issued),
        last_modified=_text(graph, node, DCTERMS.modified),
        format=fmt,
        mime=_mime(graph, node),
        filesize=_size(graph, node),
        checksum=_checksum(graph, node),
        type="other" if part else "api" if graph.value(node, DCAT.accessService) is not None else "main",
        extras={key: value for key, value in extras.items() if value},
    )


def _license(graph: Graph, node, distributions: list, want: str) -> str | None:
    """udata's order: the dataset's dct:license, its dct:rights, then the distributions' dct:license, then
    their dct:rights (a dataset stating none takes a distribution's: udata's "License detection")."""
    candidates = []
    pairs = [(node, DCTERMS.license), (node, DCTERMS.rights),
             *((d, predicate) for predicate in (DCTERMS.license, DCTERMS.rights) for d in distributions)]
    for subject, predicate in pairs:
        for value in graph.objects(subject, predicate):
            candidates.append(str(value))
            label = _label(graph, value, want)
            if label and label != str(value):
                candidates.append(label)
    return guess_license(candidates)


def _keywords(graph: Graph, node, want: str) -> tuple[list[str], dict[str, list[str]]]:
    values = [(k.language.lower() if isinstance(k, Literal) and k.language else None, str(k))
              for p in (DCAT.keyword, DCTERMS.keyword)  # dct:keyword is seen in the wild; udata's table says dcat
              for k in graph.objects(node, p) if isinstance(k, Literal)]
    return lang.choose_all(values, want), lang.translations_all(values)


def map_dataset(graph: Graph, node, *, language: str = lang.DEFAULT_LANGUAGE) -> Dataset:
    """udata's dcat:Dataset -> Dataset mapping (see docs/metadata-harvesting.md for the table)."""
    want = language
    distributions = sorted({d for p in DISTRIBUTIONS for d in graph.objects(node, p)}, key=str)
    # udata: dct:abstract when there is no dct:description
    description = _text(graph, node, DCTERMS.description, want=want) or _text(graph, node, DCTERMS.abstract, want=want)
    keywords, keyword_translations = _keywords(graph, node, want)
    tags: list[str] = []
    add_tags(tags, keywords)
    for theme in (t for p in (DCAT.theme, DCTERMS.theme) for t in graph.objects(node, p)):
        add_tags(tags, _theme_tags(graph, theme, want))
    extras: dict = {}
    identifier = _text(graph, node, DCTERMS.identifier)
    if identifier:
        extras["dct:identifier"] = identifier
    if isinstance(node, URIRef):
        extras["uri"] = str(node)
    landing = _text(graph, node, DCAT.landingPage, FOAF.homepage)
    if landing:
        extras["remote_url"] = landing
    issued = _text(graph, node, DCTERMS.issued)
    if issued:
        extras["dct:issued"] = issued
    translations: dict = _translated(graph, node, {"title": (DCTERMS.title,),
                                                   "description": (DCTERMS.description, DCTERMS.abstract)}, want)
    if keyword_translations:
        translations["tags"] = keyword_translations
    if translations:
        extras["translations"] = translations
    dcat_extras = _dcat_extras(graph, node, want, "accessRights", "rights", "license", "provenance")
    if dcat_extras:
        extras["dcat"] = dcat_extras
    licence = _license(graph, node, distributions, want)
    if inspire_restricted(dcat_extras.get("accessRights", []) + dcat_extras.get("rights", [])):
        extras["access_type"] = "restricted"
        licence = None  # udata: a dataset that is not open has no licence (the raw one stays in extras.dcat)
    resources = [map_resource(graph, d, want=want) for d in distributions if not isinstance(d, Literal)]
    resources += [map_resource(graph, d, want=want, part=True)
                  for d in sorted(graph.objects(node, DCTERMS.hasPart), key=str)]
    return Dataset(
        remote_id=remote_id(graph, node),
        title=_text(graph, node, DCTERMS.title, want=want),
        description=html_to_markdown(description) if description else None,
        tags=tags,
        frequency=guess_frequency(_text(graph, node, DCTERMS.accrualPeriodicity)),
        temporal_coverage=_temporal(graph, node),
        license=licence,
        created_at=_text(graph, node, DCTERMS.created) or issued,
        last_modified=_text(graph, node, DCTERMS.modified),
        resources=[r for r in resources if r is not None],
        extras=extras,
    )
