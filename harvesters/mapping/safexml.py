"""XML parsing that refuses what a metadata endpoint never needs: DTDs, entities, network and disk access."""

from __future__ import annotations

import re

from lxml import etree

from swath.harvesters.mapping.errors import BadDocument

# A DOCTYPE is the only way to declare entities (bombs, XXE); no OAI-PMH or RDF/XML response needs one.
_DOCTYPE = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _parser(*, keep_comments: bool = False) -> etree.XMLParser:
    # A fresh parser per document: lxml parsers are not thread-safe.
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=not keep_comments,
        remove_pis=not keep_comments,
    )


def refuse_dtd(data: bytes) -> None:
    """Raise BadDocument if the document declares a DTD or entities (checked before any parser sees it)."""
    if _DOCTYPE.search(data):
        raise BadDocument("XML with a DOCTYPE or ENTITY declaration refused (entity expansion / external entities)")


def parse_xml(data: bytes, *, keep_comments: bool = False) -> etree._Element:
    """Parse `data` into its root element, or raise BadDocument (malformed, or declares a DTD).

    `keep_comments` keeps comments and processing instructions (an archive storing records as written)."""
    refuse_dtd(data)
    try:
        root = etree.fromstring(data, parser=_parser(keep_comments=keep_comments))
    except etree.XMLSyntaxError as exc:
        raise BadDocument(f"malformed XML: {exc}") from None
    if root is None:
        raise BadDocument("empty XML document")
    docinfo = root.getroottree().docinfo
    if docinfo.doctype or docinfo.internalDTD is not None:  # belt and braces after the byte scan
        raise BadDocument("XML with a DOCTYPE refused")
    return root
