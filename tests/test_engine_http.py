"""The recording session on its own (a Recorder without the job around it): which statuses are final,
retried or waited for, the HTTP status carried by engine errors, Set-Cookie and secrets learnt late."""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import hashlib
import json
import logging
from collections.abc import Iterator

import pytest
from warcio.archiveiterator import ArchiveIterator

from swath.harvesters.base import Harvest
from swath.harvesters.errors import RemoteError, ResponseTooLarge, Unauthorized
from swath.harvesters.http import MAX_RATE_WAIT
from swath.harvesters.pending import PENDING_MAX
from swath.harvesters.recorder import Recorder
from swath.messages.model import HarvestStart
from tests.enginekit import raw_bytes, read_records, start_message, warc_files, warcio_check
from tests.fakes.httpserver import FakeServer, Response, end_chunks, write_chunk


@pytest.fixture
def server():
    with FakeServer() as srv:
        yield srv


@contextlib.contextmanager
def recording(config, directory, seed: str = "unused", **changes) -> Iterator[Recorder]:
    """A harvest's recorder (its `http` is the platform's `harvest.http`) whose WARC is closed (and its
    writer ended) when the block ends; `seed` is its seed's token (a URL: an origin its credentials may go to)."""
    config = dataclasses.replace(config, **{"http_retries": 3, "http_backoff": 0.01, **changes})
    recorder = Recorder(start=HarvestStart.from_dict(start_message(seed)), config=config, directory=directory)
    try:
        yield recorder
    finally:
        recorder.finish(final=True)
        recorder.close()


def recorded_statuses(directory) -> list[str]:
    return [r[2] for r in read_records(warc_files(directory)) if r[0] == "response"]


@pytest.mark.parametrize("status", [501, 505])
def test_501_and_505_are_final_answers_not_retried(config, data_root, server, status):
    server.route("/sync")(lambda request: Response(status, b"not here"))
    with recording(config, data_root) as recorder:
        response = recorder.http.get(server.url + "/sync")
    assert response.status_code == status and response.content == b"not here"
    assert len(server.requests_to("/sync")) == 1
    assert recorded_statuses(data_root) == [str(status)]


def test_503_with_retry_after_waits_as_asked_and_counts_as_rate_limited(config, data_root, server):
    answers = [Response(503, b"maintenance", headers={"Retry-After": "1"}), Response(200, b'{"ok": true}')]
    server.route("/busy")(lambda request: answers.pop(0))
    with recording(config, data_root) as recorder:
        response = recorder.http.get(server.url + "/busy")
    assert response.json() == {"ok": True}
    waits, seconds = recorder.ledger.rate_limits
    assert waits == 1 and seconds == 1.0  # the server's wait, not the 0.01 s backoff
    assert recorded_statuses(data_root) == ["503", "200"]


def test_503_asking_for_longer_than_the_bound_fails_at_once_with_its_status(config, data_root, server):
    asked = int(MAX_RATE_WAIT) + 60
    server.route("/busy")(lambda request: Response(503, b"down for hours", headers={"Retry-After": str(asked)}))
    with recording(config, data_root) as recorder, pytest.raises(RemoteError) as caught:
        recorder.http.get(server.url + "/busy")
    assert caught.value.status == 503 and str(asked) in caught.value.message
    assert len(server.requests_to("/busy")) == 1 and recorder.ledger.rate_limits[0] == 0


def test_a_503_with_only_a_rate_limit_reset_header_gets_the_ordinary_backoff(config, data_root, server):
    reset = "9999999999"  # Twitter sends its window reset on every answer; it is no reason to wait on a 503
    answers = [Response(503, b"busy", headers={"x-rate-limit-reset": reset}), Response(200, b"{}")]
    server.route("/busy")(lambda request: answers.pop(0))
    with recording(config, data_root) as recorder:
        assert recorder.http.get(server.url + "/busy").status_code == 200
    assert recorder.ledger.rate_limits[0] == 0 and len(server.requests_to("/busy")) == 2


def test_engine_errors_carry_the_http_status(config, data_root, server):
    server.route("/denied")(lambda request: Response(403, b"no"))
    server.route("/broken")(lambda request: Response(502, b"bad gateway"))
    server.route("/big")(lambda request: Response(200, b"x" * 500))
    with FakeServer() as gone:
        unreachable = gone.url + "/nothing"
    with recording(config, data_root, max_response_bytes=100) as recorder:
        outcomes = {}
        for path, url in [("/denied", server.url + "/denied"), ("/broken", server.url + "/broken"),
                          ("/big", server.url + "/big"), ("unreachable", unreachable)]:
            with pytest.raises((Unauthorized, RemoteError, ResponseTooLarge)) as caught:
                recorder.http.get(url)
            outcomes[path] = (type(caught.value), caught.value.status)
    assert outcomes == {"/denied": (Unauthorized, 403), "/broken": (RemoteError, 502),
                        "/big": (ResponseTooLarge, 200), "unreachable": (RemoteError, None)}
    assert len(server.requests_to("/broken")) == 1 + 3  # 502 is still retried


def test_set_cookie_values_are_redacted_and_the_rest_of_the_response_kept(config, data_root, server):
    session, theme = "sess-9f8e7d6c5b4a", "dark-theme-1"
    body = b'{"hello": "world"}\n'
    cookies = [f"sessionid={session}; Path=/; HttpOnly", f"theme={theme}", "gone=; Max-Age=0"]

    def login(request):
        return Response(200, body, headers={"Set-Cookie": cookies[0], "X-Other": "kept"})

    def stream(request):
        def write(wfile) -> None:
            write_chunk(wfile, b'{"id": 1}\n')
            end_chunks(wfile)

        return Response(200, write, headers={"Set-Cookie": cookies[1]}, content_type="application/x-ndjson")

    server.route("/login")(login)
    server.route("/stream")(stream)
    server.route("/logout")(lambda request: Response(200, b"bye", headers={"Set-Cookie": cookies[2]}))
    with recording(config, data_root) as recorder:
        answer = recorder.http.get(server.url + "/login")
        with recorder.http.get(server.url + "/stream", stream=True) as streamed:
            lines = list(streamed.iter_lines())
        recorder.http.get(server.url + "/logout")
    assert answer.cookies["sessionid"] == session and answer.content == body  # the client sees the real one
    assert lines == [b'{"id": 1}']
    assert server.requests_to("/stream")[0].headers["Cookie"] == f"sessionid={session}"  # and sends it

    files = warc_files(data_root)
    assert warcio_check(files).returncode == 0
    blob = raw_bytes(files)
    assert session.encode() not in blob and theme.encode() not in blob
    responses = [r for r in read_records(files) if r[0] == "response"]
    set_cookies = [h.get_header("Set-Cookie") for _, _, _, h, _, _ in responses]
    assert set_cookies == ["sessionid=REDACTED; Path=/; HttpOnly", "theme=REDACTED", "gone=; Max-Age=0"]
    first_headers, first_body, first_warc = responses[0][3], responses[0][4], responses[0][5]
    assert first_body == body and first_headers.get_header("X-Other") == "kept"
    digest = "sha1:" + base64.b32encode(hashlib.sha1(body).digest()).decode()
    assert first_warc.get_header("WARC-Payload-Digest") == digest


def test_a_secret_learnt_during_the_harvest_is_redacted_from_then_on(config, data_root, server, caplog):
    token = "late-token-5e6f7a8b"
    server.route("/api")(lambda request: Response(200, b"{}"))
    caplog.set_level(logging.DEBUG, logger="urllib3.connectionpool")
    with recording(config, data_root, seed=server.url) as recorder:
        harvest = Harvest(recorder=recorder)  # the platform's view of it
        harvest.add_secret(token)
        harvest.http.get(server.url + "/api", params={"session": token}, headers={"X-Session": token})
        harvest.warning("note", f"session {token} is about to expire")
    assert server.requests_to("/api")[0].arg("session") == token  # what is sent is untouched
    assert token.encode() not in raw_bytes(warc_files(data_root))
    assert recorder.ledger.view().warnings[0].message == "session REDACTED is about to expire"
    assert "/api?session=" in caplog.text and token not in caplog.text


def test_bodies_reach_the_client_decoded_and_the_warc_as_sent(config, data_root, server):
    plain = json.dumps({"items": list(range(300))}).encode()
    packed = gzip.compress(plain)
    server.route("/plain")(lambda request: Response(200, plain))
    server.route("/packed")(lambda request: Response(200, packed, headers={"Content-Encoding": "gzip"}))
    with recording(config, data_root) as recorder:
        as_sent = recorder.http.get(server.url + "/plain")
        encoded = recorder.http.get(server.url + "/packed")
    assert as_sent.content == plain and b"".join(as_sent.iter_content(7)) == plain
    assert encoded.content == plain and encoded.json() == json.loads(plain)
    files = warc_files(data_root)
    assert warcio_check(files).returncode == 0
    with open(files[0], "rb") as fh:
        stored = {rec.rec_headers.get_header("WARC-Target-URI").rsplit("/", 1)[1]: rec.raw_stream.read()
                  for rec in ArchiveIterator(fh) if rec.rec_type == "response"}
    assert stored == {"plain": plain, "packed": packed}  # gzip stays gzip in the WARC


def test_gathered_item_records_are_in_the_warc_a_rotation_closes_in_order(config, tmp_path, server):
    """Item records are handed to the writer in batches: a rotation queues those gathered before it, so the
    WARC it closes (the one its journal is committed with) holds them all, in order after the exchange."""
    server.route("/page")(lambda req: Response(200, b'{"items": []}'))
    count = PENDING_MAX + 5  # one batch queued on its own, five records still gathered
    with recording(config, tmp_path) as recorder:
        recorder.http.get(server.url + "/page")
        for n in range(count):
            recorder.write_record(uri=f"urn:test:{n}", record_type="resource", payload=b"%d" % n,
                                  content_type="application/json")
        recorder.rotate()
        recorder.http.get(server.url + "/page")
        recorder.write_record(uri="urn:test:last", record_type="resource", payload=b"last",
                              content_type="application/json")
    first, second = sorted(warc_files(tmp_path))
    page = server.url + "/page"
    assert [(r[0], r[1]) for r in read_records([first])][1:] == [
        ("request", page), ("response", page), *(("resource", f"urn:test:{n}") for n in range(count))]
    assert [(r[0], r[1]) for r in read_records([second])][1:] == [
        ("request", page), ("response", page), ("resource", "urn:test:last")]
