"""Content codings end to end: what the harvesters offer in Accept-Encoding is what the WARC readers undo.

A fake Twitter API v2 compresses its answers with the real libraries (brotli, gzip, zlib) when the request
accepts that coding; the real harvester stores them as sent, and the real exporter must read every tweet.
"""

from __future__ import annotations

import csv
import gzip
import json
import zlib
from pathlib import Path

import brotli
import pytest
import requests
from requests.adapters import HTTPAdapter

from swath.core import encodings
from swath.core.jobs import JobContext
from swath.exporters.base import run_export
from swath.harvesters.social import mount_recording
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.fakes.social import run_harvest_job, start_body
from tests.fakes.twitter import BEARER_TOKEN, FakeTwitter, matches

COMPRESS = {"br": brotli.compress, "gzip": gzip.compress, "deflate": zlib.compress}  # RFC 9110 deflate: zlib


class EncodingTwitter(FakeTwitter):
    """FakeTwitter whose JSON answers use `coding` whenever the request's Accept-Encoding offers it."""

    def __init__(self, *, coding: str, **kwargs) -> None:
        self.coding = coding  # set first: FakeTwitter.__init__ adds the routes
        self.codings_sent: list[str] = []
        super().__init__(**kwargs)

    def add_route(self, path: str, fn, method: str | None = None) -> None:
        def encoded(req: Request) -> Response:
            resp = fn(req)
            offered = {c.strip().split(";")[0] for c in req.headers.get("Accept-Encoding", "").split(",")}
            if self.coding in offered and isinstance(resp.body, bytes):
                resp.body = COMPRESS[self.coding](resp.body)
                resp.headers = {**resp.headers, "Content-Encoding": self.coding}
                self.codings_sent.append(self.coding)
            else:
                self.codings_sent.append("identity")
            return resp

        super().add_route(path, encoded, method)


def export_csv(config, *, export_id: str, workers: int) -> tuple[dict, list[dict]]:
    """Export collection c1 to CSV in this process; returns the final status and the rows."""
    statuses: list[dict] = []
    ctx = JobContext(config=config, publish=lambda key, body: statuses.append(body), service="test")
    body = {"id": export_id, "type": "twitter_search_2", "collection": {"id": "c1"}, "path": f"exports/{export_id}",
            "format": "csv", "dedupe": False, "segment_size": None}
    run_export(body, routing_key="export.start.twitter.twitter_search_2", ctx=ctx, workers=workers)
    rows = []
    for path in sorted((config.data_root / "exports" / export_id).glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            rows += list(csv.DictReader(fh))
    return statuses[-1], rows


@pytest.mark.parametrize("coding", ["br", "gzip", "deflate"])
def test_a_harvest_answered_in_each_offered_coding_exports_every_tweet(config, coding):
    with EncodingTwitter(coding=coding) as fake:
        cfg = config.with_api_url("twitter", fake.url)
        out = run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": {"query": "gwu"}}],
                                              credentials={"bearer_token": BEARER_TOKEN}))
        searches = fake.server.requests_to("/2/tweets/search/recent")
        sent = fake.bodies("/2/tweets/search/recent")
        hits = [t for t in fake.world.tweets if matches("gwu", t)]

    assert out.status["status"] == "completed success", out.status
    assert out.count("tweets") == len(hits) > fake.page_size  # more than one page
    # the offer is the pinned one, and the server used the coding under test for every page
    assert searches and {r.headers.get("Accept-Encoding") for r in searches} == {encodings.ACCEPT_ENCODING}
    assert set(fake.codings_sent) == {coding}
    stored = [payload for _uri, status, payload in out.records() if status == 200]
    assert sorted(stored) == sorted(sent)  # kept as sent: still compressed in the WARC
    assert all(not body.startswith(b"{") for body in stored)

    want = sorted(t["id"] for t in hits)
    final, rows = export_csv(cfg, export_id="first", workers=1)
    assert final["status"] == "completed success", final
    assert final["warnings"] == [] and final["items"] == len(want)
    assert sorted(row["id"] for row in rows) == want
    # again, from the record-offset cache the first export left, read by reader processes
    assert list((cfg.data_root / ".swath" / "records").glob("*.json"))
    final, rows = export_csv(cfg, export_id="again", workers=2)
    assert final["status"] == "completed success" and final["warnings"] == [], final
    assert sorted(row["id"] for row in rows) == want


def test_a_library_session_offers_the_pinned_codings_whatever_urllib3_would():
    session = requests.Session()
    session.headers["Accept-Encoding"] = "gzip, deflate, br, zstd"  # urllib3's offer once zstandard is installed
    with FakeServer({"/": lambda req: Response(200, b"{}")}) as server, session:
        mount_recording(session, adapter=HTTPAdapter(), default="https://api.example", base=server.url)
        session.get("https://api.example/")
        assert [r.headers.get("Accept-Encoding") for r in server.requests] == [encodings.ACCEPT_ENCODING]
    assert "zstd" not in encodings.DECODERS  # so it must not be offered


def test_every_offered_coding_has_a_decoder():
    assert encodings.ACCEPT_ENCODING == ", ".join(encodings.ADVERTISED)
    assert set(encodings.ADVERTISED) <= set(encodings.DECODERS)


@pytest.mark.parametrize("coding", sorted(COMPRESS))
def test_decode_undoes_each_coding_and_a_stack_of_them(coding):
    body = json.dumps({"data": [{"id": str(i), "text": "caf\u00e9 " * i} for i in range(200)]}).encode()
    assert encodings.decode(COMPRESS[coding](body), coding.upper()) == body
    stacked = brotli.compress(COMPRESS[coding](body))  # `coding` applied first, then br
    assert encodings.decode(stacked, f"{coding}, br") == body


@pytest.mark.parametrize("coding", sorted(COMPRESS))
def test_decode_bounded_stops_at_the_limit(coding):
    body = json.dumps({"data": [{"id": str(i), "text": "caf\u00e9 " * i} for i in range(200)]}).encode()
    assert encodings.decode_bounded(COMPRESS[coding](body), coding, limit=len(body)) == body
    assert encodings.decode_bounded(COMPRESS[coding](body), coding, limit=len(body) - 1) is None
    assert encodings.decode_bounded(COMPRESS[coding](body), "compress", limit=len(body)) is None  # not ours


def test_decode_keeps_what_a_cut_stream_holds_and_leaves_unknown_codings_alone():
    body = bytes(range(256)) * 4096  # 1 MiB that brotli cannot shrink to nothing
    packed = brotli.compress(body, quality=1)
    partial = encodings.decode(packed[: len(packed) // 2], "br")
    assert 0 < len(partial) < len(body) and body.startswith(partial)
    raw_deflate = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    assert encodings.decode(raw_deflate.compress(body) + raw_deflate.flush(), "deflate") == body
    assert encodings.decode(b"\x28\xb5\x2f\xfdzstd frame", "zstd") == b"\x28\xb5\x2f\xfdzstd frame"
    assert encodings.decode(b"not brotli at all", "br") == b"not brotli at all"
    assert encodings.decode(body, "identity") == body


def test_readers_decode_br_in_a_warc(tmp_path: Path):
    """The exporters' reader (FastWARC) undoes br in a response record written by warcio."""
    from io import BytesIO

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    from swath.exporters.warc_reader import iter_responses

    body = json.dumps({"data": [{"id": "1"}]}).encode()
    path = tmp_path / "one.warc.gz"
    with path.open("wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        headers = StatusAndHeaders("200 OK", [("Content-Type", "application/json"), ("Content-Encoding", "br")],
                                   protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record("https://api.twitter.com/2/tweets/search/recent", "response",
                                                      payload=BytesIO(brotli.compress(body)), http_headers=headers))
    [resp] = list(iter_responses(path, on_truncated=lambda warc, message: None))
    assert resp.body == body
