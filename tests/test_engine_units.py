"""Engine pieces on their own: WARC recovery, filename-safe ids, redaction, state store, reset headers,
the embedded runner's output."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from swath.core.paths import safe_id
from swath.harvesters.embedded import EXIT_INVALID, EXIT_SUCCESS, print_publish, run_message
from swath.harvesters.http import rate_limit_wait
from swath.harvesters.redaction import REDACTED, Redactor
from swath.harvesters.state import StateStore
from swath.harvesters.warc import WarcFile, find_harvest_warcs, recover
from swath.harvesters.warc_records import RecordFactory
from swath.messages import codes
from swath.messages.validation import InvalidMessage
from tests.enginekit import (
    PagedApi,
    read_records,
    start_message,
    warcio_check,
)
from tests.fakes.httpserver import FakeServer


def _write_warc(directory: Path, harvest_id: str, n: int) -> Path:
    factory = RecordFactory()
    warc = WarcFile(directory=directory, harvest_id=harvest_id, serial=1, info={"software": "test"})
    for i in range(n):  # one record per write, so a cut tail loses exactly one
        warc.write(factory.plain(uri=f"urn:test:{i}", record_type="resource", payload=b"x" * 100 + bytes([i]),
                                 content_type="application/octet-stream"))
    return warc.open_path


def test_recover_cuts_a_killed_warc_at_its_last_complete_record(tmp_path):
    open_path = _write_warc(tmp_path, "h:1", 5)
    data = open_path.read_bytes()
    open_path.write_bytes(data[:-7])  # the last gzip member lost its tail, as after kill -9
    final = recover(open_path)
    assert final is not None and final.name.endswith(".warc.gz") and not open_path.exists()
    assert warcio_check([final]).returncode == 0
    records = read_records([final])
    assert [r[0] for r in records] == ["warcinfo"] + ["resource"] * 4
    assert [r[4][-1] for r in records[1:]] == [0, 1, 2, 3]
    assert find_harvest_warcs(tmp_path, "h:1") == ([final], [])


def test_recover_removes_a_warc_without_a_complete_content_record(tmp_path):
    open_path = _write_warc(tmp_path, "h:2", 1)
    open_path.write_bytes(open_path.read_bytes()[:-3])
    assert find_harvest_warcs(tmp_path, "h:2") == ([], [open_path])
    assert recover(open_path) is None and not open_path.exists()


def test_safe_ids_are_filename_safe_and_distinct():
    assert safe_id("abc-1_2.3") == "abc-1_2.3"
    ids = ["sfmui:45", "sfmui_45", "../etc/passwd", "a/b", ".hidden"]
    safe = [safe_id(i) for i in ids]
    assert len(set(safe)) == len(ids)
    assert all("/" not in s and ":" not in s and not s.startswith(".") for s in safe)


def test_redactor_removes_credentials_only_from_what_it_is_given():
    secret, consumer = "tok-SECRET-1234", "ck/with+chars="
    redactor = Redactor([secret, consumer, True, None, "ab"])
    url = redactor.url(f"https://u:p@api.x/1?q=a%20b&oauth_signature=zzz&api_key=k1&token={secret}")
    assert url == f"https://api.x/1?q=a%20b&oauth_signature={REDACTED}&api_key={REDACTED}&token={REDACTED}"
    headers = dict(redactor.headers([("Authorization", 'OAuth oauth_consumer_key="x", oauth_signature="y"'),
                                      ("X-Other", f"v {secret}"), ("Accept", "ab"), ("X-Tab", "tab")]))
    # a short secret goes as a whole token only (tests/test_redaction_units.py)
    assert headers == {"Authorization": f"OAuth {REDACTED}", "X-Other": f"v {REDACTED}", "Accept": REDACTED,
                       "X-Tab": "tab"}
    body = redactor.body(b"a=1&consumer_secret=abc&x=ck%2Fwith%2Bchars%3D", "application/x-www-form-urlencoded")
    assert body == f"a=1&consumer_secret={REDACTED}&x={REDACTED}".encode()
    assert redactor.body(json.dumps({"k": secret}).encode(), "application/json") == b'{"k": "REDACTED"}'


def test_state_store_stages_until_commit_and_keeps_other_keys(tmp_path):
    first, second = StateStore(directory=tmp_path), StateStore(directory=tmp_path)
    first.set("since:a", 10)
    assert first.get("since:a") == 10 and not first.path.exists()
    second.set("since:b", 20)
    second.commit()
    first.commit()
    assert json.loads(first.path.read_text()) == {"since:a": 10, "since:b": 20}
    first.delete("since:a")
    first.commit()
    assert StateStore(directory=tmp_path).get("since:a", "gone") == "gone"
    assert not list(tmp_path.glob("*.tmp"))


def test_rate_limit_wait_reads_reset_headers():
    now = time.time()
    assert abs(rate_limit_wait({"x-rate-limit-reset": str(int(now) + 30)}, now=now) - 31) < 1.01
    assert rate_limit_wait({"retry-after": "7"}, now=now) == 7
    assert rate_limit_wait({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=now) == 0
    assert rate_limit_wait({}, now=now) is None


def test_embedded_runner_prints_json_lines(config):
    with FakeServer() as server:
        PagedApi(server, pages=2)
        out, err = io.StringIO(), io.StringIO()
        code = run_message(start_message(server.url + "/pages"), config=config, out=out, err=err)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert code == EXIT_SUCCESS
    assert [m["routing_key"] for m in lines][-2:] == ["warc_created", "harvest.status.generic.generic_pages"]
    assert lines[-1]["message"]["status"] == "completed success"
    assert run_message({"id": "x", "type": "nope", "path": "p"}, config=config, out=out, err=err) == EXIT_INVALID


def test_embedded_publish_prints_only_valid_messages():
    out, sent = io.StringIO(), []
    publish = print_publish(out, sent)
    good = {"id": "h:1", "status": "running", "date_started": "2024-01-01T00:00:00+00:00",
            "service": "Generic Harvester", "host": "localhost", "instance": "1"}
    publish("harvest.status.generic.generic_pages", good)
    for key, body, code in [
        ("harvest.status.generic.generic_pages", {**good, "status": "half done"}, codes.SCHEMA_INVALID),
        ("warc_created", good, codes.SCHEMA_INVALID),  # a status is not a warc_created
        ("harvest.finished.generic", good, codes.UNKNOWN_ROUTING_KEY),
    ]:
        with pytest.raises(InvalidMessage) as caught:
            publish(key, body)
        assert caught.value.code == code
    assert [json.loads(line)["message"] for line in out.getvalue().splitlines()] == [good]
    assert [m["message"] for m in sent] == [good]


def test_digests_are_base32_sha1_as_the_standard_library_writes_them():
    import base64
    import hashlib

    from swath.harvesters.warc_records import _sha1

    for data in [b"", b"x", bytes(range(256)) * 40]:
        assert _sha1(data) == "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def test_records_of_every_size_are_one_gzip_member_each_readable_by_warcio(tmp_path):
    """From an empty payload to 2 MB, each record is its own gzip member (a cut after it keeps the records
    before) and reads back byte for byte."""
    import zlib

    factory = RecordFactory()
    warc = WarcFile(directory=tmp_path, harvest_id="h:3", serial=1, info={"software": "test"})
    payloads = [b"", b"a", bytes(range(256)) * 5, bytes(range(256)) * 200,
                b"".join(i.to_bytes(4, "big") for i in range(1 << 19))]  # 2 MB
    for i, payload in enumerate(payloads):
        warc.write(factory.plain(uri=f"urn:test:{i}", record_type="resource", payload=payload,
                                 content_type="application/octet-stream"))
    closed = warc.close()
    assert warcio_check([closed.path]).returncode == 0
    assert [r[4] for r in read_records([closed.path])][1:] == payloads
    data, members = closed.path.read_bytes(), 0
    while data:
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        block = inflater.decompress(data)
        assert inflater.eof and block.startswith(b"WARC/1.") and block.endswith(b"\r\n\r\n")
        data, members = inflater.unused_data, members + 1
    assert members == 1 + len(payloads)


def _warcio_bytes(record) -> bytes:
    from warcio.warcwriter import WARCWriter

    out = io.BytesIO()
    WARCWriter(out, gzip=False).write_record(record)
    return out.getvalue()


def test_prepared_records_are_the_bytes_warcio_builds_and_writes():
    """The factory formats WARC headers itself (PreparedRecord); warcio's builder, given the same headers,
    writes the same bytes, and a caller's header that warcio places itself sends the record through warcio."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from swath.harvesters.warc_records import LAST_RESPONSE, PreparedRecord

    factory, builder = RecordFactory(redactor=Redactor(["s3cret-value"])), WARCWriter(BytesIO())
    records = [
        *factory.pair(uri="https://api.example/x?q=é&api_key=s3cret-value", request_line="GET /x?q=%C3%A9 HTTP/1.1",
                      request_headers=[("Host", "api.example"), ("Accept", "*/*")],  # redacted by the adapter
                      request_body=b"", status_line="200 OK",
                      response_headers=[("Content-Type", "application/json"), ("X-Name", "Zoë")],
                      response_body=b'{"token": "s3cret-value", "n": 1}', extra={"WARC-Date": "2026-11-27T06:00:00Z"}),
        factory.plain(uri="urn:swath:oai_pmh:s:oai%3Ax%3A1", record_type="resource", payload=b'{"id": 1}',
                      content_type="application/json",
                      headers={"WARC-Swath-Remote-Id": "oai:x:1", "WARC-Refers-To": LAST_RESPONSE}),
        factory.plain(uri="urn:x:2", record_type="metadata", payload=b"", content_type="application/json"),
    ]
    for record in records:
        assert isinstance(record, PreparedRecord)
        written = record.head + record.payload + b"\r\n\r\n"
        assert _warcio_bytes(record) == written
        given = record.rec_headers.headers[:-4]  # the caller's and the factory's, before the four warcio places
        http = record.http_headers
        if http is not None:
            http = StatusAndHeaders(http.statusline, list(http.headers), protocol=http.protocol)
        again = builder.create_warc_record(record.rec_headers.get_header("WARC-Target-URI"), record.rec_type,
                                           payload=BytesIO(record.payload), length=len(record.payload),
                                           warc_content_type="" if http is not None else record.content_type,
                                           warc_headers_dict=dict(given), http_headers=http)
        assert _warcio_bytes(again) == written
    assert b"s3cret-value" not in b"".join(r.head + r.payload for r in records)
    odd = factory.plain(uri="urn:x:3", record_type="resource", payload=b"x", content_type="text/plain",
                        headers={"content-type": "text/csv"})  # warcio replaces it in place: warcio builds it
    assert not isinstance(odd, PreparedRecord) and b"\r\ncontent-type: text/plain\r\n" in _warcio_bytes(odd)


def test_the_deadline_watchdog_wakes_for_an_earlier_deadline_and_forgets_finished_exchanges():
    """It is woken only by a watch expiring before every other one (not per exchange), and the watches of
    finished exchanges do not pile up for their whole deadline."""
    import threading

    from swath.harvesters.deadline import Watch, _Watchdog

    dog = _Watchdog()
    late, early = Watch(3600), Watch(0.2)
    shut = threading.Event()
    early._add(shut.set)  # what attaching a connection adds: called when the deadline passes
    dog.arm(late)  # the watchdog now sleeps until the late one's deadline
    dog.arm(early)
    assert shut.wait(30) and early.fired and not late.fired
    for _ in range(5 * _Watchdog.COMPACT_AT):
        finished = Watch(3600)
        dog.arm(finished)
        finished.done()
    assert len(dog._heap) <= 2 * _Watchdog.COMPACT_AT + 1
    assert any(entry[2] is late for entry in dog._heap)  # a running exchange's watch is kept


def test_the_factorys_records_read_the_same_with_warcio_fastwarc_and_cdxj_indexer(tmp_path):
    """The records the factory formats itself (a redacted pair with a non-ASCII header, a stream segment, an item's
    resource referring to the response, an empty metadata record): warcio and FastWARC read the same WARC headers,
    HTTP headers and payloads, FastWARC finds every digest right, and cdxj-indexer indexes each at its offset."""
    import subprocess
    import sys

    from fastwarc.warc import ArchiveIterator as FastIterator
    from warcio.archiveiterator import ArchiveIterator

    from swath.harvesters.warc_records import LAST_RESPONSE

    factory = RecordFactory(redactor=Redactor(["s3cret-value"]))
    warc = WarcFile(directory=tmp_path, harvest_id="h:read", serial=1, info={"software": "test"})
    exchange = dict(uri="https://api.example/x?q=é&api_key=s3cret-value", request_line="GET /x?q=%C3%A9 HTTP/1.1",
                    request_headers=[("Host", "api.example"), ("Accept", "*/*")], request_body=b"",
                    status_line="200 OK", response_headers=[("Content-Type", "application/json"), ("X-Name", "Zoë")])
    pair = factory.pair(**exchange, response_body=b'{"token": "s3cret-value", "n": 1}')
    segment = factory.segment(**exchange, response_body=b'{"n": 2}\n', request_id=pair[0].record_id)
    item = factory.plain(uri="urn:swath:oai_pmh:s:oai%3Ax%3A1", record_type="resource", payload=b'{"id": 1}',
                         content_type="application/json", headers={"WARC-Refers-To": LAST_RESPONSE})
    empty = factory.plain(uri="urn:x:2", record_type="metadata", payload=b"", content_type="application/json")
    warc.write(*pair, *segment, item, empty)
    path = warc.close().path
    with open(path, "rb") as fh:
        by_warcio = [(rec.rec_headers.headers, rec.http_headers.headers if rec.http_headers else None,
                      rec.content_stream().read()) for rec in ArchiveIterator(fh)]
    with open(path, "rb") as fh:
        by_fastwarc = [(list(rec.headers.items()), list(rec.http_headers.items()) if rec.http_headers else None,
                        rec.verify_payload_digest(consume=False) or not rec.http_headers, rec.reader.read())
                       for rec in FastIterator(fh, parse_http=True)]
    with open(path, "rb") as fh:
        blocks = [(rec.verify_block_digest(consume=True), rec.stream_pos) for rec in FastIterator(fh, parse_http=False)]
    assert [(h, http, body) for h, http, _, body in by_fastwarc] == [(list(h), http, body)
                                                                      for h, http, body in by_warcio]
    assert all(ok for _, _, ok, _ in by_fastwarc) and all(ok for ok, _ in blocks)
    assert len(by_warcio) == 6 and b"s3cret-value" not in path.read_bytes() and b"s3cret" not in b"".join(
        body for _, _, body in by_warcio)
    done = subprocess.run([str(Path(sys.executable).parent / "cdxj-indexer"), str(path)], capture_output=True,
                          text=True, check=True)
    indexed = [json.loads(line.split(" ", 2)[2]) for line in done.stdout.splitlines()]
    ends = [pos for _, pos in blocks[1:]] + [path.stat().st_size]
    expected = [(dict(h)["WARC-Target-URI"], dict(h)["WARC-Payload-Digest"], str(pos), str(end - pos))
                for (h, _, _), (_, pos), end in zip(by_warcio, blocks, ends, strict=True)
                if dict(h)["WARC-Type"] in ("response", "resource", "metadata")]
    assert len(expected) == 4 and [(f["url"], f["digest"], f["offset"], f["length"]) for f in indexed] == expected


def test_batched_gzip_members_are_the_bytes_the_zlib_module_writes(swath_seed):
    """harvesters/_gzmembers.c compresses a batch of whole records in one call; the bytes must be those of the
    zlib module's calls (warc_gzip.GzipMembers without the batch), records past JOIN_BELOW and empty ones
    between them, and every member a gzip member holding its record."""
    import random
    import zlib

    pytest.importorskip("swath.harvesters._gzmembers", reason="the optional C helper is not built here")
    from swath.harvesters.warc_gzip import GzipMembers

    rng = random.Random(swath_seed)
    words = [rng.randbytes(rng.randint(1, 12)) for _ in range(200)]
    batches = [[b"".join(rng.choice(words) for _ in range(rng.choice([0, 1, 40, 300, 9000])))
                for _ in range(rng.randint(1, 70))] for _ in range(12)]
    outputs = []
    for batched in (True, False):
        members, out = GzipMembers(batched=batched), []
        for batch in batches:
            for record in batch:
                members.member(record[:7], record[7:])  # given in parts, as a PreparedRecord's head and payload
            out.append(members.take())
        outputs.append(out)
    assert outputs[0] == outputs[1]
    data, found = b"".join(outputs[0]), []
    while data:
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        found.append(inflater.decompress(data))
        assert inflater.eof
        data = inflater.unused_data
    assert found == [record for batch in batches for record in batch]
