"""Credentials never leave through what a harvest writes, logs or reports (issue #16, redaction).

Real fake servers on 127.0.0.1 echo credentials in bodies (plain and gzip), keep an api_key in Location,
Content-Location, Link and Refresh, set cookies and reflect them, and Flickr's signature check fails; a seed
URL carries user:password. Then everything under the data root (WARCs decompressed), the log at DEBUG and
the statuses are scanned for each secret and its URL-encoded and base64 forms.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import gzip
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, quote_plus

from fastwarc.warc import ArchiveIterator as FastArchiveIterator
from warcio.archiveiterator import ArchiveIterator

from swath.harvesters.base import Harvest
from swath.harvesters.recorder import Recorder
from swath.messages.broker import Publisher
from swath.messages.model import HarvestStart
from tests.backendkit import harvest as backend_harvest
from tests.fakes.ckan import CKANPortal
from tests.fakes.flickr import API_KEY, API_SECRET, FakeFlickr
from tests.fakes.httpserver import FakeServer, Request, Response, end_chunks, write_chunk
from tests.fakes.social import run_harvest_job, start_body
from tests.reliability.kit import (
    Collector,
    WorkerProcess,
    declare_queues,
    everything_written,
    leaks,
    warcio_check,
)

SECRET = "rk-5ecr/t+Key=9Qx2"  # '/', '+' and '=' make its encoded forms differ from it
COOKIE = "sess-7Hq2Lm9Zp4Xc"  # what the fake sets as its session cookie
USER, PASSWORD = "harvest-user", "pw-7Gq/x+2=Lk"


def forms(*secrets: str) -> list[str]:
    """Each secret as is, URL-encoded (quote, quote_plus) and base64 (standard and URL-safe)."""
    out = []
    for secret in secrets:
        raw = secret.encode()
        out += [secret, quote(secret, safe=""), quote_plus(secret), base64.b64encode(raw).decode(),
                base64.urlsafe_b64encode(raw).decode()]
    return list(dict.fromkeys(out))


def basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode()


def masked(body: bytes, *secrets: str) -> bytes:
    """The body as the WARC must hold it: each secret overwritten with as many asterisks."""
    for secret in sorted(secrets, key=len, reverse=True):
        body = body.replace(secret.encode(), b"*" * len(secret))
    return body


def responses(root: Path) -> list[tuple[str, str, dict, bytes, dict]]:
    """(type, target URI, http headers, stored payload, WARC headers) of every record."""
    out = []
    for path in sorted(root.rglob("*.warc.gz")):
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh, no_record_parse=False):
                headers = dict(rec.http_headers.headers) if rec.http_headers else {}
                out.append((rec.rec_type, rec.rec_headers.get_header("WARC-Target-URI"), headers,
                            rec.raw_stream.read(), dict(rec.rec_headers.headers)))
    return out


def scanned(data_root: Path, statuses: list, log: str) -> list[tuple[str, bytes]]:
    return [*everything_written(data_root), ("statuses", json.dumps(statuses).encode()), ("log", log.encode())]


# --- echoed and reflected credentials, keys in response headers (generic_pages, the real job) ---------------

class EchoingApi:
    """A paged JSON API that misbehaves with the credentials it is sent (see each route)."""

    def __init__(self, server: FakeServer) -> None:
        self.server = server
        self.served: dict[str, bytes] = {}
        server.route("/start")(self.start)
        server.route("/p1")(self.first)
        server.route("/p2")(self.packed)
        server.route("/p3")(self.reflecting)

    def start(self, req: Request) -> Response:  # a same-origin redirect keeping the key in Location
        return Response(302, b"", {"Location": f"/p1?api_key={quote(SECRET, safe='')}&page=1",
                                   "Set-Cookie": f"sid={COOKIE}; Path=/; HttpOnly"})

    def first(self, req: Request) -> Response:  # the key echoed in the body (as is and base64) and headers
        key = req.arg("api_key") or ""
        body = json.dumps({"items": [{"id": 1, "echo": key, "b64": base64.b64encode(key.encode()).decode()}],
                           "next": "/p2"}).encode()
        self.served["p1"] = body
        url = f"{self.server.url}/p2?api_key={quote(key, safe='')}"
        return Response(200, body, {"Link": f'<{url}>; rel="next"', "Content-Location": f"/p1?api_key={key}",
                                    "Refresh": f"0; url={url}"})

    def packed(self, req: Request) -> Response:  # the key echoed inside a gzip body
        plain = json.dumps({"items": [{"id": 2, "request": f"GET /p2?api_key={req.arg('api_key')}"}],
                            "next": "/p3"}).encode()
        self.served["p2"] = plain
        return Response(200, gzip.compress(plain), {"Content-Encoding": "gzip"})

    def reflecting(self, req: Request) -> Response:  # the session cookie reflected back
        cookie = req.headers.get("Cookie", "")
        body = json.dumps({"items": [{"id": 3, "seen": cookie}], "next": None}).encode()
        self.served["p3"] = body
        return Response(200, body)


def test_echoed_credentials_are_masked_in_the_warc_and_absent_from_logs_and_statuses(config, data_root, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeServer() as server:
        api = EchoingApi(server)
        body = start_body("generic_pages", [{"id": "seed-1", "token": server.url + "/start"}],
                          credentials={"api_key": SECRET})
        out = run_harvest_job(config, body)
        sent = server.requests_to("/p1")[0]

    assert out.status["status"] == "completed success", out.status
    assert sent.arg("api_key") == SECRET and f"sid={COOKIE}" in server.requests_to("/p3")[0].headers["Cookie"]
    found = leaks(forms(SECRET, COOKIE), scanned(data_root, out.sent, caplog.text))
    assert found == []
    assert "api_key=REDACTED" in caplog.text  # urllib3 logged the request lines, redacted

    records = responses(data_root)
    by_path = {uri.split("?")[0].rsplit("/", 1)[1]: (headers, payload, warc)
               for kind, uri, headers, payload, warc in records if kind == "response"}
    # the redirect and the URL headers keep their URL, the key redacted (pywb replays Location)
    assert by_path["start"][0]["Location"] == "/p1?api_key=REDACTED&page=1"
    assert by_path["start"][0]["Set-Cookie"] == "sid=REDACTED; Path=/; HttpOnly"
    first_headers, first_body, first_warc = by_path["p1"]
    assert first_headers["Content-Location"] == "/p1?api_key=REDACTED"
    assert first_headers["Link"] == f'<{server.url}/p2?api_key=REDACTED>; rel="next"'
    assert first_headers["Refresh"] == f"0; url={server.url}/p2?api_key=REDACTED"
    # echoed values are overwritten in place: same length, every other byte as served, the record marked
    b64 = base64.b64encode(SECRET.encode()).decode()
    assert first_body == masked(api.served["p1"], SECRET, b64) and len(first_body) == len(api.served["p1"])
    assert first_warc["WARC-Swath-Redacted"] == "2"
    # the compressed page holding the key is stored decoded and masked, its coding kept under X-Archive-Orig-
    packed_headers, packed_body, packed_warc = by_path["p2"]
    assert packed_body == masked(api.served["p2"], quote(SECRET, safe=""), SECRET)
    assert packed_headers.get("X-Archive-Orig-Content-Encoding") == "gzip" and "Content-Encoding" not in packed_headers
    assert packed_warc["WARC-Swath-Redacted"] == "1"
    # a cookie the server set is a secret of the harvest: its reflection is masked too
    assert by_path["p3"][1] == masked(api.served["p3"], COOKIE) and by_path["p3"][2]["WARC-Swath-Redacted"] == "1"
    # no WARC-Target-URI carries the key; both WARC readers still read every record
    assert all("REDACTED" in uri or "api_key" not in uri for _, uri, _, _, _ in records if uri)
    files = sorted(data_root.rglob("*.warc.gz"))
    assert warcio_check(files).returncode == 0
    with open(files[0], "rb") as fh:
        assert sum(1 for _ in FastArchiveIterator(fh)) == len(records)


def test_a_stream_echoing_the_key_is_masked_segment_by_segment(config, data_root):
    lines = [json.dumps({"id": i, "echo": SECRET if i % 2 else "nothing"}).encode() + b"\n" for i in range(6)]

    def stream(req: Request) -> Response:
        def write(wfile) -> None:
            for line in lines:
                write_chunk(wfile, line)
            end_chunks(wfile)
        return Response(200, write, content_type="application/x-ndjson")

    with FakeServer() as server:
        server.route("/stream")(stream)
        body = start_body("generic_stream", [{"id": "s1", "token": server.url + "/stream"}],
                          credentials={"api_key": SECRET})
        out = run_harvest_job(config, body)

    assert out.status["status"] == "completed success" and out.count("items") == len(lines)
    segments = [(payload, warc) for kind, uri, _, payload, warc in responses(data_root) if kind == "response"]
    assert b"".join(payload for payload, _ in segments) == masked(b"".join(lines), SECRET)
    assert sum(int(warc.get("WARC-Swath-Redacted", 0)) for _, warc in segments) == sum(1 for i in range(6) if i % 2)
    assert leaks(forms(SECRET), everything_written(data_root)) == []


# --- user:password in a seed URL (CKAN) ---------------------------------------------------------------------

def test_userinfo_in_a_seed_url_reaches_no_uri_payload_status_or_log(config, data_root, caplog):
    caplog.set_level(logging.DEBUG)
    portal = CKANPortal(count=7)
    userinfo = f"{USER}:{quote(PASSWORD, safe='')}@"
    with portal.server as server, FakeServer() as empty:
        seeds = [server.url.replace("://", f"://{userinfo}"), empty.url.replace("://", f"://{userinfo}")]
        result = backend_harvest(config, "ckan", seeds)
        sent = server.requests_to("/api/3/action/package_search")[0]

    assert sent.headers.get("Authorization") == f"Basic {basic(USER, PASSWORD)}"  # the credentials were used
    assert result.final["status"] == "completed failure"  # the second portal answers 404
    errors = result.final["errors"]
    assert errors and all("@" not in e["message"] for e in errors), errors
    assert len(result.by_status("done")) == len(portal.packages)
    secrets = [*forms(PASSWORD, USER), basic(USER, PASSWORD)]
    assert leaks(secrets, scanned(data_root, [m for _, m in result.published], caplog.text)) == []
    uris = [uri for _, uri, _, _, _ in responses(data_root) if uri]
    assert uris and all("@" not in uri and USER not in uri for uri in uris), uris


# --- a secret learnt during the harvest, cookies reflected into notes and logs ------------------------------

@contextlib.contextmanager
def recording(config, data_root: Path, seed: str = "unused") -> Iterator[Recorder]:
    """`seed` is the seed's token: a URL there is an origin the harvest's credentials may go to."""
    config = dataclasses.replace(config, http_retries=1, http_backoff=0.01)
    start = HarvestStart.from_dict(start_body("generic_pages", [{"id": "seed-1", "token": seed}],
                                              credentials={"api_key": SECRET}))
    recorder = Recorder(start=start, config=config, directory=data_root / "coll")
    try:
        yield recorder
    finally:
        recorder.finish(final=True)
        recorder.close()


def test_a_secret_added_later_and_a_cookie_set_reach_every_redactor_of_the_harvest(config, data_root, caplog):
    import requests

    token = "app-token-AAAAB3NzaC1yc2E"  # as Twitter's /oauth2/token would hand it out
    caplog.set_level(logging.DEBUG)
    with FakeServer() as server:
        server.route("/login")(lambda req: Response(200, b"{}", {"Set-Cookie": f"session={COOKIE}; Path=/"}))
        server.route("/echo")(lambda req: Response(
            400, json.dumps({"detail": f"bad token {req.headers.get('Authorization')}",
                             "cookie": req.headers.get("Cookie", "")}).encode()))
        with recording(config, data_root, seed=server.url + "/login") as recorder:
            harvest = Harvest(recorder=recorder)
            client = requests.Session()  # a client library's own session, its adapter made before the token
            adapter = harvest.recording_adapter([])
            client.mount("http://", adapter)
            harvest.http.get(server.url + "/login")
            harvest.add_secret(token)
            answer = harvest.http.get(server.url + "/echo", headers={"Authorization": f"Bearer {token}"})
            client.get(server.url + "/echo", headers={"X-Token": token}, cookies={"session": COOKIE})
            harvest.error("bad_request", f"the API refused the request: {answer.text}")
            logging.getLogger("somelib.client.child").error("refused: %s", answer.text)
            notes = recorder.ledger.view().errors

    assert COOKIE in answer.text and token in answer.text  # the server did reflect both
    assert notes and "REDACTED" in notes[0].message
    statuses = [{"message": n.message} for n in notes]
    assert leaks(forms(token, COOKIE), scanned(data_root, statuses, caplog.text)) == []
    assert "refused: " in caplog.text


# --- Flickr: a non-200 answer is logged at ERROR by flickrapi's own (child) logger -------------------------

class SignatureRefused(FakeFlickr):
    """Answers like Flickr to a bad signature: 400 and the signature base string, with the consumer key."""

    def rest(self, req: Request) -> Response:
        auth = req.headers.get("Authorization", "")
        base = "POST&" + quote(self.url + "/services/rest/", safe="") + "&" + quote(
            "&".join(p.strip().replace('"', "") for p in auth.removeprefix("OAuth ").split(",")), safe="")
        body = f"oauth_problem=signature_invalid&debug_sbs={quote(base, safe='')}&header={quote(auth, safe='')}"
        return Response(400, body.encode(), {}, "text/plain")


def test_flickr_errors_logged_by_flickrapi_carry_no_oauth_values(config, data_root, caplog):
    caplog.set_level(logging.DEBUG)
    with SignatureRefused() as fake:
        body = start_body("flickr_user", [{"id": "s1", "token": "justin.littman"}],
                          credentials={"key": API_KEY, "secret": API_SECRET})
        out = run_harvest_job(config.with_api_url("flickr", fake.url), body)
        echoed = fake.server.requests_to("/services/rest/")[0].headers["Authorization"]

    assert f'oauth_consumer_key="{API_KEY}"' in echoed  # what the fake put into its answer
    flickr_errors = [r for r in caplog.records if r.name.startswith("flickrapi") and r.levelno == logging.ERROR]
    assert flickr_errors, "flickrapi logged no error"
    assert any("oauth_consumer_key" in r.getMessage() for r in flickr_errors)
    assert out.status["status"] == "completed failure"
    assert leaks(forms(API_KEY, API_SECRET), scanned(data_root, out.sent, caplog.text)) == []



def test_a_flickr_worker_logging_at_debug_writes_no_oauth_value(config, tmp_path):
    """The same from outside: `swath --log-level DEBUG worker flickr_harvester`, its log file scanned."""
    with SignatureRefused() as fake:
        config = config.with_api_url("flickr", fake.url)
        logs = tmp_path / "logs"
        logs.mkdir()
        declare_queues(config, ["flickr_harvester"])
        worker = WorkerProcess(config=config, name="flickr_harvester", log_dir=logs, log_level="DEBUG").start()
        body = start_body("flickr_user", [{"id": "s1", "token": "justin.littman"}], harvest_id="redact:flickr",
                          credentials={"key": API_KEY, "secret": API_SECRET})
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                requester.publish("harvest.start.flickr.flickr_user", body).result(120)
                assert got.wait(lambda: "redact:flickr" in got.finals(), 120), worker.log_text()[-3000:]
                statuses = got.snapshot()
        finally:
            assert worker.stop() == 0
        log = worker.log_text()

    assert [f["status"] for f in got.finals()["redact:flickr"]] == ["completed failure"]
    assert "ERROR flickrapi.auth.OAuthFlickrInterface:" in log and "oauth_consumer_key" in log
    assert "oauth_problem=signature_invalid" in log  # the server's diagnosis stays readable
    assert "DEBUG oauthlib" in log  # the signature base string was logged, redacted
    assert leaks(forms(API_KEY, API_SECRET), scanned(config.data_root, statuses, log)) == []
