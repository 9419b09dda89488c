"""OAI-PMH 2.0 responses read into plain values: records with their deleted status, tokens, errors."""

from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from swath.harvesters.mapping.dataset import Dataset, add_tags
from swath.harvesters.mapping.errors import BadDocument, OAIError
from swath.harvesters.mapping.safexml import parse_xml
from swath.harvesters.mapping.vocab import guess_license

OAI = "http://www.openarchives.org/OAI/2.0/"
DC = "http://purl.org/dc/elements/1.1/"
NS = {"oai": OAI}
NO_RECORDS = "noRecordsMatch"  # an empty result, not a failure


@dataclass(kw_only=True)
class OAIRecord:
    identifier: str | None  # None when the header lacks one (a broken record: its item fails)
    datestamp: str | None
    deleted: bool
    sets: list[str] = field(default_factory=list)
    metadata: etree._Element | None = None


@dataclass(kw_only=True)
class Page:
    response_date: str | None
    records: list[OAIRecord]
    token: str | None  # None or "" ends the list
    complete_list_size: int | None = None


def parse_response(data: bytes, verb: str) -> tuple[etree._Element, str | None]:
    """Root element and responseDate; OAIError for <error>, an empty Page signalled by NO_RECORDS."""
    root = parse_xml(data)
    if root.tag != f"{{{OAI}}}OAI-PMH":
        raise BadDocument(f"not an OAI-PMH response (root element {root.tag!r})")
    errors = root.findall("oai:error", NS)
    if errors:
        first = errors[0]
        raise OAIError(first.get("code") or "undefined", " ".join((first.text or "").split()))
    if root.find(f"oai:{verb}", NS) is None:
        raise BadDocument(f"OAI-PMH response has no <{verb}> element")
    return root, root.findtext("oai:responseDate", namespaces=NS)


def _text(el: etree._Element | None, path: str) -> str | None:
    value = el.findtext(path, namespaces=NS) if el is not None else None
    return value.strip() if value and value.strip() else None


_RECORD, _HEADER, _METADATA = f"{{{OAI}}}record", f"{{{OAI}}}header", f"{{{OAI}}}metadata"
_IDENTIFIER, _DATESTAMP, _SET_SPEC = f"{{{OAI}}}identifier", f"{{{OAI}}}datestamp", f"{{{OAI}}}setSpec"


def _record(header: etree._Element | None, metadata: etree._Element | None) -> OAIRecord:
    """A record from its header and metadata elements (the first of each), the header's fields read in one
    pass: the first identifier and datestamp (None if blank), every setSpec with text."""
    identifier = datestamp = None
    sets: list[str] = []
    if header is not None:
        seen_id = seen_date = False
        for child in header.iterchildren(_IDENTIFIER, _DATESTAMP, _SET_SPEC):
            tag, text = child.tag, child.text
            if tag == _SET_SPEC:
                if text:
                    sets.append(text.strip())
            elif tag == _IDENTIFIER:
                if not seen_id:
                    seen_id, identifier = True, (text.strip() or None) if text else None
            elif not seen_date:
                seen_date, datestamp = True, (text.strip() or None) if text else None
    return OAIRecord(identifier=identifier, datestamp=datestamp,
                     deleted=header is not None and header.get("status") == "deleted", sets=sets,
                     metadata=metadata[0] if metadata is not None and len(metadata) else None)


def parse_list_records(data: bytes, verb: str = "ListRecords") -> Page:
    """One ListRecords (or ListIdentifiers) page; noRecordsMatch gives an empty last page."""
    try:
        root, response_date = parse_response(data, verb)
    except OAIError as exc:
        if exc.oai_code == NO_RECORDS:
            return Page(response_date=None, records=[], token=None)
        raise
    container = root.find(f"oai:{verb}", NS)
    if verb == "ListIdentifiers":
        records = [_record(header, None) for header in container.iterchildren(_HEADER)]
    else:  # each record's children looked at once, by tag (a find per field was most of the parsing)
        records = []
        for record in container.iterchildren(_RECORD):
            header = metadata = None
            for child in record.iterchildren(_HEADER, _METADATA):
                if child.tag == _HEADER:
                    header = child if header is None else header
                elif metadata is None:
                    metadata = child
            records.append(_record(header, metadata))
    token_el = container.find("oai:resumptionToken", NS)
    size = token_el.get("completeListSize") if token_el is not None else None
    return Page(
        response_date=response_date,
        records=records,
        token=(token_el.text or "").strip() if token_el is not None else None,
        complete_list_size=int(size) if size and size.isdigit() else None,
    )


def parse_identify(data: bytes) -> dict[str, str | None]:
    root, response_date = parse_response(data, "Identify")
    ident = root.find("oai:Identify", NS)
    fields = ("repositoryName", "baseURL", "protocolVersion", "earliestDatestamp", "deletedRecord", "granularity")
    out = {name: _text(ident, f"oai:{name}") for name in fields}
    out["responseDate"] = response_date
    return out


def parse_metadata_formats(data: bytes) -> list[dict[str, str | None]]:
    root, _ = parse_response(data, "ListMetadataFormats")
    return [{name: _text(fmt, f"oai:{name}") for name in ("metadataPrefix", "schema", "metadataNamespace")}
            for fmt in root.find("oai:ListMetadataFormats", NS).findall("oai:metadataFormat", NS)]


def parse_sets(data: bytes) -> tuple[list[dict[str, str | None]], str | None]:
    root, _ = parse_response(data, "ListSets")
    container = root.find("oai:ListSets", NS)
    sets = [{"setSpec": _text(s, "oai:setSpec"), "setName": _text(s, "oai:setName")}
            for s in container.findall("oai:set", NS)]
    return sets, _text(container, "oai:resumptionToken")


def map_record(record: OAIRecord, prefix: str) -> Dataset:
    """oai_dc to the dataset fields; any other format keeps its metadata XML in extras["metadata_xml"]."""
    dataset = Dataset(remote_id=record.identifier or "", last_modified=record.datestamp)
    dataset.extras = {"oai:identifier": record.identifier, "oai:datestamp": record.datestamp,
                      "oai:sets": record.sets, "oai:metadataPrefix": prefix}
    meta = record.metadata
    if meta is None:
        return dataset
    if meta.tag != "{http://www.openarchives.org/OAI/2.0/oai_dc/}dc":
        dataset.extras["metadata_xml"] = etree.tostring(meta, encoding="unicode")
        return dataset
    values: dict[str, list[str]] = {}
    for child in meta:
        if isinstance(child.tag, str) and child.tag.startswith(f"{{{DC}}}") and child.text and child.text.strip():
            values.setdefault(child.tag[len(DC) + 2:], []).append(" ".join(child.text.split()))
    titles = values.get("title")
    dataset.title = titles[0] if titles else None
    dataset.description = "\n\n".join(dict.fromkeys(values.get("description", []))) or None
    add_tags(dataset.tags, values.get("subject", []))
    dataset.license = guess_license(values.get("rights", []))  # the first dc:rights naming a known licence
    url = next((v for v in values.get("identifier", []) if v.lower().startswith(("http://", "https://"))), None)
    if url:
        dataset.extras["uri"] = url  # the record's landing page: the export's `url` column
    dataset.extras["dc"] = {name: list(dict.fromkeys(items)) for name, items in values.items()}
    return dataset
