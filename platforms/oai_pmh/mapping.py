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


def _first_text(text: str | None) -> str | None:
    return (text.strip() or None) if text else None


def _record(header: etree._Element | None, metadata: etree._Element | None) -> OAIRecord:
    """A record from its header and metadata elements (the first of each), the header's fields read in one
    pass: the first identifier and datestamp (None if blank), every setSpec with text."""
    identifier = datestamp = None
    sets: list[str] = []
    deleted = seen_id = seen_date = False
    if header is not None:
        for child in header:  # a plain walk compared by tag: iterchildren's tag matcher costs more per record
            tag = child.tag
            if tag == _SET_SPEC:
                text = child.text
                if text:
                    sets.append(text.strip())
            elif tag == _IDENTIFIER:
                if not seen_id:
                    seen_id, identifier = True, _first_text(child.text)
            elif tag == _DATESTAMP and not seen_date:
                seen_date, datestamp = True, _first_text(child.text)
        deleted = header.get("status") == "deleted"
    return OAIRecord(identifier=identifier, datestamp=datestamp, deleted=deleted, sets=sets,
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
            for child in record:
                tag = child.tag
                if tag == _HEADER:
                    if header is None:
                        header = child
                elif tag == _METADATA and metadata is None:
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


_OAI_DC = "{http://www.openarchives.org/OAI/2.0/oai_dc/}dc"
_DC_OPEN = f"{{{DC}}}"
_DC_NAME = len(_DC_OPEN)  # where a dc element's local name starts in its tag


def map_record(record: OAIRecord, prefix: str) -> Dataset:
    """oai_dc to the dataset fields; any other format keeps its metadata XML in extras["metadata_xml"]."""
    identifier = record.identifier
    dataset = Dataset(remote_id=identifier or "", last_modified=record.datestamp)
    extras: dict[str, object] = {"oai:identifier": identifier, "oai:datestamp": record.datestamp,
                                 "oai:sets": record.sets, "oai:metadataPrefix": prefix}
    dataset.extras = extras
    meta = record.metadata
    if meta is None:
        return dataset
    if meta.tag != _OAI_DC:
        extras["metadata_xml"] = etree.tostring(meta, encoding="unicode")
        return dataset
    values: dict[str, list[str]] = {}
    for child in meta:
        tag, text = child.tag, child.text
        if text and isinstance(tag, str) and tag.startswith(_DC_OPEN):
            words = text.split()  # empty exactly when text.strip() is: both split on str.isspace
            if words:
                name = tag[_DC_NAME:]
                if name in values:
                    values[name].append(" ".join(words))
                else:
                    values[name] = [" ".join(words)]
    # each field looked at only when the record has it (most records have a few of them)
    titles = values.get("title")
    if titles:
        dataset.title = titles[0]
    if "description" in values:
        dataset.description = "\n\n".join(dict.fromkeys(values["description"]))
    if "subject" in values:
        add_tags(dataset.tags, values["subject"])
    if "rights" in values:
        dataset.license = guess_license(values["rights"])  # the first dc:rights naming a known licence
    for value in values.get("identifier", ()):
        if value.lower().startswith(("http://", "https://")):
            extras["uri"] = value  # the record's landing page: the export's `url` column
            break
    extras["dc"] = {name: items if len(items) == 1 else list(dict.fromkeys(items)) for name, items in values.items()}
    return dataset
