"""AMF files: split a piece of AMF into its identified records, one `<amf>` document each.

Every record is written the same way (the source's root element and namespaces, the record noun as
it was, newline-separated), so the bytes of a stored version change exactly when the record's own
bytes change — whitespace included, as the Kiel paper asks.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from swath.harvesters.mapping.errors import MetadataError
from swath.harvesters.mapping.safexml import parse_xml

NOUNS = {"text", "person", "organization", "collection"}


class BadAmf(ValueError):
    """Not well-formed XML, a DOCTYPE (entities would not survive the split), or not an <amf> document."""


@dataclass(frozen=True)
class AmfRecord:
    id: str
    noun: str
    data: bytes


def _local(tag: object) -> str:
    return etree.QName(tag).localname if isinstance(tag, str) else ""


def split_records(data: bytes) -> Iterator[AmfRecord]:
    """The identified records (nouns with an `id`, children of the root) of one AMF file."""
    try:
        root = parse_xml(data, keep_comments=True)
    except MetadataError as exc:
        raise BadAmf(exc.message) from None
    if _local(root.tag) != "amf":
        raise BadAmf(f"the root element is <{_local(root.tag)}>, not <amf>")
    for noun in root:
        if _local(noun.tag) in NOUNS and noun.get("id"):
            single = etree.Element(root.tag, nsmap=root.nsmap)
            single.text = "\n"
            child = copy.deepcopy(noun)
            child.tail = "\n"
            single.append(child)
            yield AmfRecord(noun.get("id"), _local(noun.tag),
                            etree.tostring(single, xml_declaration=True, encoding="UTF-8") + b"\n")
