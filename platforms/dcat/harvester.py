"""DCAT catalogs (JSON-LD, RDF/XML, Turtle) paged through Hydra, mapped with udata's DCAT rules."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urljoin, urlsplit, urlunsplit

import rdflib

from swath.harvesters.backends import Backend, BackendHarvester, Item, Page
from swath.harvesters.mapping import lang
from swath.harvesters.mapping.dataset import Dataset
from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.pages import PageGuard
from swath.platforms.dcat import mapping, rdf
from swath.platforms.dcat.declaration import PLATFORM

ACCEPT = "application/ld+json, text/turtle;q=0.9, application/rdf+xml;q=0.8, */*;q=0.1"


def _normalise(url: str) -> str:
    split = urlsplit(url)
    return urlunsplit((split.scheme.lower(), split.netloc.lower(), split.path or "/", split.query, ""))




class DCATBackend(Backend):
    name = PLATFORM.name
    display_name = PLATFORM.title

    @property
    def language(self) -> str:
        return str(self.source.options.get("language") or lang.DEFAULT_LANGUAGE)

    def fetch_context(self, url: str) -> bytes:
        """Remote JSON-LD contexts go through the harvest's recorded, size-limited session."""
        return self.fetch(url, accept="application/ld+json, application/json").content

    def pages(self) -> Iterator[tuple[str, rdflib.Graph, str | None]]:
        """(page URL, graph, next page URL); an interrupted harvest starts at the page it had reached."""
        url: str | None = self.resume if isinstance(self.resume, str) else self.source.url
        guard = PageGuard(what="the catalog's pages", seed_id=self.source.id)
        while url:
            guard.cursor(_normalise(url))  # a `next` back to a page harvested already, or too many pages
            fetched = self.fetch(url, accept=ACCEPT)
            fmt = rdf.detect_format(fetched.content, content_type=fetched.content_type, url=fetched.url)
            graph = rdf.load_graph(fetched.content, fmt=fmt, base=fetched.url, fetch_context=self.fetch_context)
            following = mapping.next_page(graph)
            url = urljoin(fetched.url, following) if following else None
            yield fetched.url, graph, url

    def list_items(self) -> Iterator[Item | Page]:
        for page_url, graph, following in self.pages():
            for n, node in enumerate(mapping.dataset_nodes(graph), 1):
                try:
                    remote_id = mapping.remote_id(graph, node)
                except MetadataError as exc:
                    yield Item(remote_id=f"({page_url}, dataset {n})", error=str(exc), anonymous=True)
                    continue
                try:  # mapped now: the page's graph is dropped after it
                    dataset = mapping.map_dataset(graph, node, language=self.language)
                except Exception as exc:  # a mapping bug fails this dataset only
                    yield Item(remote_id=remote_id, error=f"{type(exc).__name__}: {exc}")
                    continue
                uri = str(node) if dataset.extras.get("uri") else f"{page_url}#{remote_id}"
                yield Item(remote_id=remote_id, uri=uri, data=dataset)
            if following:
                yield Page(following)

    def process(self, item: Item) -> Dataset | None:
        dataset: Dataset = item.data  # list_items mapped it already
        return dataset


class DCATHarvester(BackendHarvester, declaration=PLATFORM):
    backend = DCATBackend
