"""WARCs that replay tools read as the truth (issue #17 item 7): valid target URIs, a capture time of its own
for every capture of a URI, one request record per stream connection, derived records under URIs of their own
that refer to the response they were read from. Checked with warcio, FastWARC and cdxj-indexer here, and with
pywb replay in test_pywb_replays_every_capture_by_timestamp (slow: pywb needs a venv of its own)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from hypothesis import given
from hypothesis import strategies as st
from warcio.archiveiterator import ArchiveIterator

from swath.exporters.warc_reader import iter_responses
from swath.harvesters.base import Harvest
from swath.harvesters.capture import safe_uri
from swath.harvesters.recorder import Recorder
from swath.harvesters.run import run_harvest
from swath.messages.model import HarvestStart
from tests.backendkit import harvest as backend_harvest
from tests.enginekit import StreamApi, context, routing_key, start_message, wait_for, warcio_check
from tests.fakes.httpserver import FakeServer, Response, end_chunks, write_chunk
from tests.fakes.oai import SickleEndpoint

VENV_BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent
# RFC 3986 URI characters: unreserved, reserved, and % only as the start of an escape
URI_CHARS = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


def records(paths: list[Path]) -> list:
    """(type, warc headers, http headers or None, payload) of every record, with warcio."""
    out = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                out.append((rec.rec_type, rec.rec_headers, rec.http_headers, rec.content_stream().read()))
    return out


def cdxj(paths: list[Path]) -> list[tuple[str, str, dict]]:
    """(urlkey, 14-digit timestamp, fields) of every line cdxj-indexer writes for the WARCs."""
    done = subprocess.run([str(VENV_BIN / "cdxj-indexer"), *map(str, paths)], capture_output=True, text=True,
                          check=True)
    lines = []
    for line in done.stdout.splitlines():
        key, stamp, fields = line.split(" ", 2)
        lines.append((key, stamp, json.loads(fields)))
    return lines


def fastwarc_records(paths: list[Path]) -> list:
    """(is a response, target URI, record date) of every record, with FastWARC."""
    out = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in FastIterator(fh, parse_http=False):
                out.append((rec.record_type == WarcRecordType.response, rec.headers.get("WARC-Target-URI"),
                            rec.record_date))
    return out


# --- target URIs ---------------------------------------------------------------------------------------

def test_target_uri_forbidden_characters_are_percent_encoded():
    assert safe_uri("https://data.example.org/dataset/my data") == "https://data.example.org/dataset/my%20data"
    assert safe_uri("https://example.org/café?q=ü") == "https://example.org/caf%C3%A9?q=%C3%BC"
    assert safe_uri("https://example.org/100%/x%2") == "https://example.org/100%25/x%252"
    assert safe_uri('https://example.org/a"b<c>{d}|e\\f^g`h') == (
        "https://example.org/a%22b%3Cc%3E%7Bd%7D%7Ce%5Cf%5Eg%60h")


@given(st.text())
def test_safe_uri_output_is_a_uri_and_valid_uris_are_kept_byte_identical(text):
    uri = safe_uri(text)
    assert URI_CHARS.match(uri)
    assert safe_uri(uri) == uri  # a valid URI (as produced) is left alone


@given(st.lists(st.one_of(st.sampled_from(list("AZaz09-._~:/?#[]@!$&'()*+,;=")),
                          st.tuples(st.sampled_from("0123456789ABCDEFabcdef"),
                                    st.sampled_from("0123456789ABCDEFabcdef")).map(lambda p: "%" + "".join(p)))))
def test_valid_uris_are_unchanged(parts):
    uri = "".join(parts)
    assert safe_uri(uri) == uri


def _recorder(config, directory: Path, *, stream: bool = False) -> Recorder:
    start = HarvestStart.from_dict({"id": "replay-1", "type": "generic_pages", "path": str(directory),
                                    "seeds": [], "options": {}, "credentials": {},
                                    "collection_set": {"id": "cs"}, "collection": {"id": "c"}})
    return Recorder(start=start, config=config, directory=directory, stream=stream)


def test_written_records_get_valid_target_uris_that_the_tools_index(config, data_root):
    recorder = _recorder(config, data_root)
    iri = "https://data.example.org/dataset/café au lait"
    Harvest(recorder=recorder).write_record(uri=iri, record_type="resource", payload=b"{}",
                                            content_type="application/json")
    recorder.finish(final=True)
    files = [w.path for w in recorder.warcs]
    (rtype, headers, _, _), = [r for r in records(files) if r[0] != "warcinfo"]
    assert headers.get_header("WARC-Target-URI") == "https://data.example.org/dataset/caf%C3%A9%20au%20lait"
    assert warcio_check(files).returncode == 0
    (_, _, fields), = cdxj(files)
    assert fields["url"] == "https://data.example.org/dataset/caf%C3%A9%20au%20lait"


# --- stream captures ----------------------------------------------------------------------------------

def _stream_harvest(config, data_root, harvest_id: str) -> list[Path]:
    """A generic_stream rotated every 0.2 s until it has written 4 WARCs: segments of one connection, several
    in one second."""
    config = dataclasses.replace(config, warc_max_seconds=0.2, status_interval=0.2)
    with FakeServer() as server:
        StreamApi(server, every=0.002)
        ctx, published = context(config)
        message = start_message(server.url + "/stream", harvest_id=harvest_id, type_="generic_stream",
                                path=f"coll-{harvest_id}")
        thread = threading.Thread(target=run_harvest, args=(message,),
                                  kwargs={"routing_key": routing_key("generic_stream"), "ctx": ctx})
        thread.start()
        try:
            wait_for(lambda: len(published.warcs) >= 4)
        finally:
            ctx.stop.set()
        thread.join(120)
        assert not thread.is_alive()
    assert published.kinds()[-1] == "completed success"
    return [Path(w["warc"]["path"]) for w in published.warcs]


def test_stream_segments_have_one_request_and_a_capture_time_each(config, data_root):
    files = _stream_harvest(config, data_root, "replay-stream")
    recs = records(files)
    requests = [r for r in recs if r[0] == "request"]
    responses = [r for r in recs if r[0] == "response"]
    assert len(responses) >= 4  # a segment at each rotation at least
    # one connection: one request record, and every segment refers to it
    assert len(requests) == 1
    request_id = requests[0][1].get_header("WARC-Record-ID")
    first, later = responses[0], responses[1:]
    assert requests[0][1].get_header("WARC-Concurrent-To") == first[1].get_header("WARC-Record-ID")
    assert all(r[1].get_header("WARC-Concurrent-To") == request_id for r in later)
    assert [int(r[1].get_header("WARC-Swath-Stream-Segment")) for r in responses] == list(
        range(1, len(responses) + 1))
    # every capture reachable by (URI, 14-digit timestamp) in the tools' index
    indexed = [(key, stamp) for key, stamp, fields in cdxj(files) if fields.get("mime") != "warc/request"]
    stream_key = indexed[0][0]
    assert len([k for k, _ in indexed if k == stream_key]) == len(responses)
    assert len(set(indexed)) == len(indexed)
    # FastWARC reads the same records, dates distinct and in order
    fast = [r for r in fastwarc_records(files) if r[0]]
    assert len(fast) == len(responses)
    dates = [d for _, _, d in fast]
    assert dates == sorted(dates) and len(set(dates)) == len(dates)
    assert warcio_check(files).returncode == 0
    # and the exporters' reader still gets every line, in order, from the segments
    ids = []
    for path in files:
        for resp in iter_responses(path, on_truncated=lambda *_: None):
            ids.extend(json.loads(line)["id"] for line in resp.body.splitlines() if line.strip())
    assert ids == list(range(len(ids))) and ids


def test_reconnects_to_one_uri_get_their_own_request_and_capture_time(config, data_root):
    def short_stream(request):
        def body(wfile) -> None:
            for n in range(3):
                write_chunk(wfile, json.dumps({"id": n}).encode() + b"\n")
            end_chunks(wfile)

        return Response(200, body, content_type="application/x-ndjson")

    recorder = _recorder(config, data_root, stream=True)
    harvest = Harvest(recorder=recorder)
    connections = 3
    with FakeServer({"/stream": short_stream}) as server:
        for _ in range(connections):  # a client reconnecting at once, as twarc does after a drop
            with harvest.http.get(server.url + "/stream", stream=True) as response:
                assert len([line for line in response.iter_lines() if line]) == 3
    recorder.finish(final=True)
    files = [w.path for w in recorder.warcs]
    recs = records(files)
    requests = [r for r in recs if r[0] == "request"]
    responses = [r for r in recs if r[0] == "response"]
    assert len(requests) == len(responses) == connections
    stamps = [stamp for _, stamp, fields in cdxj(files) if fields.get("mime") != "warc/request"]
    assert len(stamps) == connections == len(set(stamps))


# --- derived records --------------------------------------------------------------------------------------

def test_dataset_records_have_a_urn_and_refer_to_the_response_they_were_read_from(config, fixtures_dir):
    with SickleEndpoint(fixtures_dir).server as server:
        result = backend_harvest(config, "oai_pmh", f"{server.url}/oai")
    recs = records(result.warcs)
    responses = {r[1].get_header("WARC-Record-ID"): r for r in recs if r[0] == "response"}
    items = [r for r in recs if r[0] == "resource" and r[1].get_header("WARC-Swath-Item-Type") == "dataset"]
    assert items
    for _, headers, _, payload in items:
        uri = headers.get_header("WARC-Target-URI")
        remote_id = headers.get_header("WARC-Swath-Remote-Id")
        assert uri.startswith("urn:swath:oai_pmh:seed-1:") and URI_CHARS.match(uri)
        assert json.loads(payload)["id"] == remote_id
        # the item's own URI is kept beside it, valid too
        assert URI_CHARS.match(headers.get_header("WARC-Swath-Item-URI"))
        # the response it refers to is a recorded ListRecords answer holding this very identifier
        referred = responses[headers.get_header("WARC-Refers-To")]
        assert "verb=ListRecords" in referred[1].get_header("WARC-Target-URI") or "resumptionToken" in referred[
            1].get_header("WARC-Target-URI")
        assert remote_id.encode() in referred[3]
    # no derived record is filed under a URL that was fetched (or never was)
    fetched = {r[1].get_header("WARC-Target-URI") for r in responses.values()}
    assert not fetched & {r[1].get_header("WARC-Target-URI") for r in items}
    assert warcio_check(result.warcs).returncode == 0


# --- pywb -------------------------------------------------------------------------------------------------

PYWB_VENV = Path(os.environ.get("SWATH_PYWB_VENV", ROOT / ".venv-pywb"))


@pytest.mark.slow
def test_pywb_replays_every_capture_by_timestamp(config, data_root, fixtures_dir, tmp_path):
    """dev/pywb-replay (pywb in a venv of its own: its brotlipy would shadow brotli) replays each capture
    that cdxj-indexer lists, by its timestamp, and compares the body with the record's."""
    files = _stream_harvest(config, data_root, "replay-pywb")
    with SickleEndpoint(fixtures_dir).server as server:
        result = backend_harvest(config, "oai_pmh", f"{server.url}/oai")
    files += result.warcs
    done = subprocess.run(["bash", str(ROOT / "dev" / "pywb-replay"), str(tmp_path / "pywb"), *map(str, files)],
                          capture_output=True, text=True, env={**os.environ, "SWATH_PYWB_VENV": str(PYWB_VENV)},
                          timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    captures = [(key, stamp) for key, stamp, fields in cdxj(files)
                if fields.get("mime") != "warc/request" and fields.get("status", "200") == "200"]
    assert report["replayed"] == len(captures) > 0 and report["mismatched"] == []
    # a stream segment and a dataset record among them
    assert any("/stream" in u for u in report["urls"]) and any(u.startswith("urn:swath:") for u in
                                                                       report["urls"])
