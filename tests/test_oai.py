"""OAI-PMH against real repositories' responses (sickle, pyoai fixtures) served on 127.0.0.1."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from lxml import etree

from swath.core.jobs import JobInterrupted
from swath.harvesters.mapping.errors import BadDocument, OAIError
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.platforms.oai_pmh import mapping
from tests.backendkit import Result, harvest
from tests.enginekit import context, wait_for
from tests.fakes.httpserver import FakeServer, Response
from tests.fakes.oai import XML, GeneratedRepository, PyoaiEndpoint, SickleEndpoint

NS = {"o": mapping.OAI}


def _chain(directory: Path) -> list[Path]:
    """sickle's ListRecords files in resumptionToken order, read from the files themselves."""
    files, name = [], "ListRecords.xml"
    while name:
        files.append(directory / name)
        token = etree.parse(str(directory / name)).findtext(".//o:resumptionToken", namespaces=NS)
        name = (token or "").strip()
    return files


def _expected(files: list[Path]) -> dict[str, list[str]]:
    """Each record's outcome: no identifier fails, a repeat is skipped, status=deleted is a deletion."""
    out: dict[str, list[str]] = {"done": [], "deleted": [], "skipped": [], "failed": []}
    seen: set[str] = set()
    for path in files:
        for header in etree.parse(str(path)).iterfind(".//o:record/o:header", NS):
            ident = (header.findtext("o:identifier", namespaces=NS) or "").strip()
            if not ident:
                out["failed"].append(path.name)
            elif ident in seen:
                out["skipped"].append(ident)
            else:
                seen.add(ident)
                out["deleted" if header.get("status") == "deleted" else "done"].append(ident)
    return out


def test_sickle_chain_is_followed_to_the_end(config, fixtures_dir):
    files = _chain(fixtures_dir / "oai-pmh" / "sickle")
    expected = _expected(files)
    assert len(files) > 2 and expected["failed"], "the chain ends with a record lacking its identifier"
    with SickleEndpoint(fixtures_dir).server as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
        list_requests = [r for r in server.requests_to("/oai") if r.arg("verb") == "ListRecords"]
    assert len(list_requests) == len(files)
    assert [r.arg("resumptionToken") for r in list_requests[1:]] == [f.name for f in files[1:]]
    assert sorted(result.by_status("done")) == sorted(expected["done"])
    assert sorted(result.by_status("deleted")) == sorted(expected["deleted"])
    totals = result.totals()
    for status in ("done", "deleted", "skipped", "failed"):
        assert totals.get(status, 0) == len(expected[status]), status
    # the bad record failed on its own, with its place as remote id; the rest was harvested
    assert result.codes() == [codes.ITEM_FAILED] * len(expected["failed"])
    assert "no identifier" in result.final["errors"][0]["message"]
    assert result.final["errors"][0]["seed_id"] == "seed-1"
    done = next(iter(result.by_status("done").values()))
    assert done["dataset"]["title"] == "Sample Title"
    assert done["harvest"]["remote_id"] == done["id"] and done["harvest"]["source_id"] == "seed-1"
    assert done["harvest"]["domain"] == "127.0.0.1" and done["harvest"]["last_update"]
    deleted = next(iter(result.by_status("deleted").values()))
    assert deleted["deleted"] is True and deleted["dataset"] is None and deleted["deletion_reason"] == "marked"
    assert any("verb=ListRecords" in uri for uri in result.responses)  # raw responses are in the WARC too


def test_pyoai_listrecords_by_mapping(config, fixtures_dir):
    page = etree.parse(str(fixtures_dir / "oai-pmh" / "pyoai-fake2" / "00002.xml"))
    headers = page.findall(".//o:record/o:header", NS)
    deleted = {h.findtext("o:identifier", namespaces=NS) for h in headers if h.get("status") == "deleted"}
    live = {h.findtext("o:identifier", namespaces=NS) for h in headers} - deleted
    first = page.find(".//o:record", NS)
    first_id = first.findtext("o:header/o:identifier", namespaces=NS)
    first_title = first.findtext(".//{http://purl.org/dc/elements/1.1/}title")
    endpoint = PyoaiEndpoint(fixtures_dir)
    with endpoint.server as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai/", options={"from": "2004-01-01T00:00:00Z"})
    assert len(headers) == 81
    assert set(result.by_status("done")) == live
    assert set(result.by_status("deleted")) == deleted and deleted
    assert result.by_status("done")[first_id]["dataset"]["title"] == first_title
    assert result.final["status"] == "completed success" and result.final["errors"] == []
    # dc:identifier: the first http(s) one is the record's url (some records put a citation first)
    dc = "{http://purl.org/dc/elements/1.1/}"
    for record in page.iterfind(".//o:record", NS):
        rid = record.findtext("o:header/o:identifier", namespaces=NS)
        if rid in deleted:
            continue
        urls = [i.text.strip() for i in record.iter(f"{dc}identifier") if i.text.strip().startswith("http")]
        assert result.by_status("done")[rid]["dataset"]["extras"].get("uri") == (urls[0] if urls else None), rid
    assert any(r["dataset"]["extras"].get("uri") for r in result.by_status("done").values())


@pytest.mark.parametrize("rights,licence", [
    (["Copyright 2001, the authors"], None),  # free text naming no licence: none guessed (kept in extras.dc)
    (["Copyright the authors", "https://creativecommons.org/licenses/by/4.0/"], "cc-by"),
    (["Licence Ouverte Version 2.0"], "lov2"),
])
def test_dc_rights_is_the_licence(rights, licence):
    dc = "".join(f"<dc:rights>{r}</dc:rights>" for r in rights)
    xml = (f'<oai_dc:dc xmlns:oai_dc="http://www.openarchives.org/OAI/2.0/oai_dc/" '
           f'xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>T</dc:title>{dc}</oai_dc:dc>').encode()
    record = mapping.OAIRecord(identifier="oai:x:1", datestamp="2024-01-01", deleted=False,
                               metadata=etree.fromstring(xml))
    dataset = mapping.map_record(record, "oai_dc")
    assert dataset.license == licence
    assert dataset.extras["dc"]["rights"] == rights


def test_fixtures_claiming_validity_validate_and_parse(fixtures_dir):
    schema = etree.XMLSchema(etree.parse(str(fixtures_dir / "oai-pmh" / "OAI-PMH.xsd")))
    checked = 0
    for path in sorted((fixtures_dir / "oai-pmh").glob("*/*.xml")):
        try:
            doc = etree.parse(str(path))
        except etree.XMLSyntaxError:
            with pytest.raises(BadDocument):
                mapping.parse_list_records(path.read_bytes())
            continue
        if not schema.validate(doc):
            continue  # deliberately broken fixtures (missing identifier, undefined error code)
        checked += 1
        root = doc.getroot()
        verb = next(etree.QName(el).localname for el in root
                    if etree.QName(el).localname not in {"responseDate", "request"})
        data = path.read_bytes()
        if verb == "error":
            code = root.find("o:error", NS).get("code")
            if code == mapping.NO_RECORDS:
                assert mapping.parse_list_records(data).records == []
            else:
                with pytest.raises(OAIError) as err:
                    mapping.parse_list_records(data)
                assert err.value.oai_code == code and err.value.code == codes.OAI_ERROR
        elif verb in {"ListRecords", "GetRecord", "ListIdentifiers"}:
            page = mapping.parse_list_records(data, verb)
            listed = root.findall(f"o:{verb}/o:record", NS) or root.findall(f"o:{verb}/o:header", NS)
            assert len(page.records) == len(listed)
            ids = [r.identifier for r in page.records]
            assert ids == [h.findtext("o:identifier", namespaces=NS) for h in root.iterfind(".//o:header", NS)]
        elif verb == "Identify":
            assert mapping.parse_identify(data)["granularity"] == root.findtext(".//o:granularity", namespaces=NS)
        elif verb == "ListSets":
            sets, _ = mapping.parse_sets(data)
            assert len(sets) == len(root.findall(".//o:set", NS))
        elif verb == "ListMetadataFormats":
            assert len(mapping.parse_metadata_formats(data)) == len(root.findall(".//o:metadataFormat", NS))
    assert checked >= 15


def test_incremental_from_uses_identify_granularity(config, fixtures_dir):
    sickle = fixtures_dir / "oai-pmh" / "sickle"
    granularity = etree.parse(str(sickle / "Identify.xml")).findtext(".//o:granularity", namespaces=NS)
    response_date = etree.parse(str(sickle / "ListRecords.xml")).findtext("o:responseDate", namespaces=NS)
    assert granularity == "YYYY-MM-DD"
    endpoint = SickleEndpoint(fixtures_dir, overrides={"from": "noRecordsMatch.xml"})
    with endpoint.server as server:
        first = harvest(config, "oai_pmh", f"{server.url}/oai")
        second = harvest(config, "oai_pmh", f"{server.url}/oai")
        lists = [r for r in server.requests_to("/oai")
                 if r.arg("verb") == "ListRecords" and not r.arg("resumptionToken")]
    assert lists[0].arg("from") is None
    assert lists[1].arg("from") == response_date[:10]  # day granularity: the date part only
    assert first.by_status("done") and second.records == []  # nothing changed; nothing reported deleted
    assert second.final["status"] == "completed success"


def test_disappeared_records_are_deletions_on_a_full_harvest(config, fixtures_dir):
    endpoint = SickleEndpoint(fixtures_dir)
    with endpoint.server as server:
        first = harvest(config, "oai_pmh", f"{server.url}/oai")
        endpoint.overrides["ListRecords"] = "noRecordsMatch.xml"
        second = harvest(config, "oai_pmh", f"{server.url}/oai", options={"incremental": False})
    gone = second.by_status("deleted")
    assert set(gone) == set(first.by_status("done")) and gone
    assert {r["deletion_reason"] for r in gone.values()} == {"disappeared"}


@pytest.mark.parametrize("fixture", ["badResumptionToken.xml", "cannotDisseminateFormat.xml", "badArgument.xml"])
def test_oai_errors_end_the_listing_with_a_code(config, fixtures_dir, fixture):
    oai_code = etree.parse(str(fixtures_dir / "oai-pmh" / "sickle" / fixture)).find("o:error", NS).get("code")
    with SickleEndpoint(fixtures_dir, overrides={"ListRecords": fixture}).server as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
    assert result.codes() == [codes.OAI_ERROR]
    assert oai_code in result.final["errors"][0]["message"]
    assert result.final["status"] == "completed failure"


def test_no_records_match_is_an_empty_harvest(config, fixtures_dir):
    with SickleEndpoint(fixtures_dir, overrides={"ListRecords": "noRecordsMatch.xml"}).server as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
    assert result.final["status"] == "completed success" and result.records == []


def test_broken_response_is_a_bad_response(config, fixtures_dir):
    with SickleEndpoint(fixtures_dir, overrides={"ListRecords": "ListRecordsBroken.xml"}).server as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
    assert result.codes() == [codes.BAD_RESPONSE]


def test_repeated_resumption_token_is_stopped(config, fixtures_dir):
    sickle = fixtures_dir / "oai-pmh" / "sickle"
    page = (sickle / "ListRecords.xml").read_bytes().replace(b">ListRecords2.xml<", b">same-token<")
    identify = (sickle / "Identify.xml").read_bytes()
    with FakeServer({"/oai": lambda req: Response(200, identify if req.arg("verb") == "Identify" else page,
                                                  content_type=XML)}) as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
        served = len([r for r in server.requests_to("/oai") if r.arg("verb") == "ListRecords"])
    assert served == 2  # the first page, then the token once; its second appearance stops the loop
    assert result.codes() == [codes.PAGINATION_LOOP]
    assert result.by_status("done")  # what came before the loop is kept


def test_503_with_retry_after_is_waited_out(config, fixtures_dir):
    config = dataclasses.replace(config, http_retries=2)
    endpoint = SickleEndpoint(fixtures_dir, failures=[(503, {"Retry-After": "1"})])
    with endpoint.server as server:
        result = harvest(config, "oai_pmh", f"{server.url}/oai")
        identify = [r for r in server.requests_to("/oai") if r.arg("verb") == "Identify"]
    assert len(identify) == 2  # refused once with 503, asked again
    assert result.by_status("done") and codes.REMOTE_ERROR not in result.codes()


def test_dry_run_writes_no_records_and_no_state(config, fixtures_dir):
    endpoint = SickleEndpoint(fixtures_dir, overrides={"from": "noRecordsMatch.xml"})
    with endpoint.server as server:
        dry = harvest(config, "oai_pmh", f"{server.url}/oai", options={"dryrun": True})
        real = harvest(config, "oai_pmh", f"{server.url}/oai")
        lists = [r for r in server.requests_to("/oai")
                 if r.arg("verb") == "ListRecords" and not r.arg("resumptionToken")]
    assert dry.records == [] and dry.warcs == []  # nothing durable, not even the HTTP exchanges
    assert dry.totals()["done"] == len(real.by_status("done")) > 0
    assert codes.DRY_RUN in dry.codes("infos")
    assert lists[1].arg("from") is None  # the dry run left no `from` behind


def test_list_sets_and_metadata_formats(fixtures_dir):
    import requests

    from swath.harvesters.backends import Source
    from swath.platforms.oai_pmh.harvester import OAIPMHBackend

    sickle = fixtures_dir / "oai-pmh" / "sickle"
    sets = etree.parse(str(sickle / "ListSets.xml")).findall(".//o:set/o:setSpec", NS)
    prefixes = etree.parse(str(sickle / "ListMetadataFormats.xml")).findall(".//o:metadataPrefix", NS)
    with SickleEndpoint(fixtures_dir).server as server, requests.Session() as http:
        backend = OAIPMHBackend(source=Source(id="s", url=f"{server.url}/oai"), http=http, max_bytes=1 << 20, state={})
        assert [s["setSpec"] for s in backend.list_sets()] == [s.text for s in sets]
        assert [f["metadataPrefix"] for f in backend.list_metadata_formats()] == [p.text for p in prefixes]


def _start(url: str, harvest_id: str, options: dict | None = None) -> dict:
    return {"id": harvest_id, "type": "oai_pmh", "path": "collection", "seeds": [{"id": "seed-1", "token": url}],
            "options": options or {}, "collection_set": {"id": "cs-1"}, "collection": {"id": "c-1"}}


def test_an_interrupted_harvest_resumes_where_it_stopped_and_counts_each_record_once(config):
    """issue #18 item 6: a shutdown mid-listing, then the redelivered start: the final counts are the
    repository's, and the resumed run goes on with a resumptionToken instead of listing from the start."""
    config = dataclasses.replace(config, warc_max_bytes=6000)  # several WARCs: checkpoints commit on the way
    repo = GeneratedRepository(count=600, per_page=25, deleted_every=20, gate_after=10)
    deleted = sum(1 for n in range(1, repo.count + 1) if repo.is_deleted(n))
    with repo.server as server:
        message = _start(f"{server.url}/oai", "oai:resume:1")
        ctx, first = context(config)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                run_harvest(message, routing_key="harvest.start.oai_pmh.oai_pmh", ctx=ctx)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for(repo.waiting.is_set, what="the harvest held at page 11")
        finally:
            ctx.shutdown.set()
            ctx.stop.set()
            repo.gate.set()
        thread.join(120)
        assert not thread.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], JobInterrupted)
        assert all(s["status"] == "running" for s in first.statuses)
        served_before = len(repo.pages_served)
        assert max(repo.pages_served) < repo.count // repo.per_page  # really cut short

        ctx, second = context(config)
        run_harvest(message, routing_key="harvest.start.oai_pmh.oai_pmh", ctx=ctx)
        resumed = [r for r in server.requests_to("/oai") if r.arg("verb") == "ListRecords"][served_before:]
    final = second.statuses[-1]
    assert final["status"] == "completed success"
    assert codes.HARVEST_RESUMED in [w["code"] for w in final["warnings"]]
    totals: dict[str, int] = {}
    for day in final["stats"].values():
        for label, n in day.items():
            totals[label] = totals.get(label, 0) + n
    assert totals == {"done": repo.count - deleted, "deleted": deleted}  # each record once
    assert resumed[0].arg("resumptionToken") not in (None, "page-1")  # went on, not from the start
    recorded = Result([("warc_created", w) for w in second.warcs] + [("harvest.status.x", final)])
    assert {r["id"] for r in recorded.records} == {repo.identifier(n) for n in range(1, repo.count + 1)}


def test_an_incremental_harvest_of_a_repository_without_deletions_says_it_cannot_see_them(config):
    repo = GeneratedRepository(count=30, per_page=10, deleted_policy="no")
    with repo.server as server:
        first = harvest(config, "oai_pmh", f"{server.url}/oai")
        second = harvest(config, "oai_pmh", f"{server.url}/oai")
    assert codes.DELETIONS_UNSEEN not in first.codes("infos")  # a full listing infers deletions itself
    assert codes.DELETIONS_UNSEEN in second.codes("infos")
