"""Load a DCAT catalog page into an rdflib Graph: JSON-LD, RDF/XML or Turtle, safely and without network."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import orjson
import rdflib

from swath.harvesters.mapping.errors import BadDocument
from swath.harvesters.mapping.safexml import parse_xml

JSONLD, RDFXML, TURTLE = "json-ld", "xml", "turtle"

_MEDIA = {
    "application/ld+json": JSONLD, "application/json": JSONLD,
    "application/rdf+xml": RDFXML, "application/xml": RDFXML, "text/xml": RDFXML,
    "text/turtle": TURTLE, "application/x-turtle": TURTLE, "text/n3": TURTLE,
}
_SUFFIX = {".jsonld": JSONLD, ".json": JSONLD, ".rdf": RDFXML, ".xml": RDFXML, ".owl": RDFXML,
           ".ttl": TURTLE, ".n3": TURTLE}
_XML_START = re.compile(rb"^(<\?xml|<!--|<[A-Za-z_][\w.-]*(:[\w.-]+)?[\s/>])")
MAX_CONTEXTS = 8  # remote @context documents fetched per page, at most

FetchContext = Callable[[str], bytes]


def detect_format(data: bytes, *, content_type: str | None = None, url: str | None = None) -> str:
    """Syntax from the Content-Type, else the URL's suffix, else the first bytes."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in _MEDIA:
        return _MEDIA[media]
    path = (url or "").split("?", 1)[0].split("#", 1)[0].lower()
    for suffix, fmt in _SUFFIX.items():
        if path.endswith(suffix):
            return fmt
    head = data.lstrip(b"\xef\xbb\xbf \t\r\n")[:512]
    if head.startswith((b"{", b"[")):
        return JSONLD
    if _XML_START.match(head):
        return RDFXML
    return TURTLE


def _inline_contexts(node: Any, fetch: FetchContext | None, budget: list[int]) -> Any:
    """Replace remote @context references by the documents' own @context, fetched through `fetch`."""
    if isinstance(node, list):
        return [_inline_contexts(item, fetch, budget) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "@import":
            raise BadDocument("JSON-LD @import is not supported")
        if key == "@context":
            out[key] = _resolve_context(value, fetch, budget)
        else:
            out[key] = _inline_contexts(value, fetch, budget)
    return out


def _resolve_context(value: Any, fetch: FetchContext | None, budget: list[int]) -> Any:
    if isinstance(value, list):
        return [_resolve_context(item, fetch, budget) for item in value]
    if isinstance(value, str):
        if fetch is None or budget[0] <= 0 or not value.startswith(("http://", "https://")):
            raise BadDocument(f"JSON-LD @context {value!r} refused (only a few http(s) contexts are fetched)")
        budget[0] -= 1
        try:
            document = orjson.loads(fetch(value))
        except orjson.JSONDecodeError as exc:
            raise BadDocument(f"JSON-LD @context {value!r} is not JSON: {exc}") from None
        if not isinstance(document, dict) or "@context" not in document:
            raise BadDocument(f"JSON-LD @context {value!r} has no @context")
        return _resolve_context(document["@context"], fetch, budget)
    return _inline_contexts(value, fetch, budget) if isinstance(value, dict) else value


def load_graph(data: bytes, *, fmt: str, base: str, fetch_context: FetchContext | None = None) -> rdflib.Graph:
    """Parse one page; BadDocument for anything malformed or unsafe."""
    graph = rdflib.Graph()
    try:
        if fmt == JSONLD:
            try:
                document = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise BadDocument(f"malformed JSON-LD: {exc}") from None
            document = _inline_contexts(document, fetch_context, [MAX_CONTEXTS])
            with warnings.catch_warnings():  # rdflib's own JSON-LD parser uses its deprecated ConjunctiveGraph
                warnings.simplefilter("ignore", DeprecationWarning)
                graph.parse(data=orjson.dumps(document).decode(), format="json-ld", publicID=base)
        elif fmt == RDFXML:
            parse_xml(data)  # refuses DTDs/entities before rdflib's expat parser sees the bytes
            graph.parse(data=data, format="xml", publicID=base)
        else:
            graph.parse(data=data.decode("utf-8", errors="strict"), format="turtle", publicID=base)
    except BadDocument:
        raise
    except Exception as exc:  # rdflib raises many unrelated types for bad input
        raise BadDocument(f"malformed {fmt} catalog: {type(exc).__name__}: {exc}"[:500]) from None
    return graph
