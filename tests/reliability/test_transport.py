"""Hostile servers against the transport policy (harvesters/guard.py, deadline.py, http.py), through the real
harvesters and two real origins on 127.0.0.1 (two ports): credentials and cookies never reach the second
origin, redirects that loop, leave http(s) or run on end the harvest with redirect_refused at once (not after
twarc's hours of retries), a dripping server is cut by SWATH_HTTP_DEADLINE, and answers too large to read
are refused for the unrecorded exchanges too (Twitter's token, the META-SHARE login)."""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import socket
import threading
from collections.abc import Callable
from urllib.parse import quote, quote_plus

import pytest

from swath.harvesters.base import Harvest
from swath.harvesters.recorder import Recorder
from swath.messages import codes
from swath.messages.model import HarvestStart
from tests.enginekit import warc_files, warcio_check
from tests.fakes.httpserver import FakeServer, Request, Response, write_chunk
from tests.fakes.social import Outcome, run_harvest_job, start_body
from tests.fakes.twitter import ACCESS_TOKEN, ACCESS_TOKEN_SECRET, CONSUMER_KEY, CONSUMER_SECRET, FakeTwitter
from tests.metasharekit import USERS, scripted_node

USER_AUTH = {"consumer_key": CONSUMER_KEY, "consumer_secret": CONSUMER_SECRET,
             "access_token": ACCESS_TOKEN, "access_token_secret": ACCESS_TOKEN_SECRET}
APP_KEYS = {"consumer_key": CONSUMER_KEY, "consumer_secret": CONSUMER_SECRET}  # a bearer token is obtained
API_KEY = "transport-api-key-71c3e9"
SEARCH = "/2/tweets/search/recent"
HANG_GUARD = 120  # seconds: every harvest here should end in a few


def finished(fn: Callable[[], Outcome], seconds: float = HANG_GUARD) -> Outcome:
    """fn() on a thread; fails the test if it has not returned within `seconds` (a hang guard)."""
    result: list[Outcome] = []
    thread = threading.Thread(target=lambda: result.append(fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert result, f"the harvest did not end within {seconds}s"
    return result[0]


def final_statuses(out: Outcome) -> list[dict]:
    return [body for key, body in out.sent
            if key.startswith("harvest.status.") and body["status"].startswith("completed")]


def forms(secret: str) -> list[str]:
    return [secret, quote(secret, safe=""), quote_plus(secret), base64.b64encode(secret.encode()).decode()]


def assert_failed_with(out: Outcome, code: str) -> dict:
    [final] = final_statuses(out)
    assert final["status"] == "completed failure", final
    assert code in [note["code"] for note in final["errors"]], final["errors"]
    return final


def assert_nowhere(out: Outcome, secrets: list[str]) -> None:
    sent, stored = json.dumps(out.sent), out.raw_warc_bytes()
    for secret in secrets:
        for form in forms(secret):
            assert form not in sent and form.encode() not in stored, form


@pytest.fixture
def elsewhere():
    """The second origin: every request it gets is logged, none is answered usefully."""
    with FakeServer() as server:
        yield server


def carried(server: FakeServer, secrets: list[str]) -> list[str]:
    """What of the requests `server` received held a credential or cookie (empty: nothing did)."""
    found = []
    for req in server.requests:
        text = f"{req.path} {req.query} {req.headers} {req.body!r}"
        found += [name for name in ("Authorization", "Cookie") if name.lower() in
                  {k.lower() for k in req.headers}]
        found += [secret for secret in secrets for form in forms(secret) if form in text]
    return found


# --- 1. credentials only to the harvest's own origins ---

@pytest.mark.parametrize("status", [302, 307])
def test_twitter_redirect_to_another_host_is_refused_before_a_signed_request_leaves(config, elsewhere, status):
    with FakeTwitter() as fake:
        fake.server.routes[("GET", SEARCH)] = lambda req: Response(
            status, b"", headers={"Location": f"{elsewhere.url}{SEARCH}?query=gwu"})
        body = start_body("twitter_search_2", [{"id": "s1", "token": "gwu"}], credentials=USER_AUTH)
        out = finished(lambda: run_harvest_job(config.with_api_url("twitter", fake.url), body))
        redirected = fake.server.requests_to(SEARCH)
    assert elsewhere.requests == []  # not even an unsigned request: nothing is sent
    assert len(redirected) == 1 and redirected[0].headers["Authorization"].startswith("OAuth ")
    final = assert_failed_with(out, codes.REDIRECT_REFUSED)
    assert elsewhere.url in json.dumps(final["errors"])  # the message says where it would have gone
    assert_nowhere(out, list(USER_AUTH.values()))


def test_a_redirect_within_the_api_origin_is_followed_and_signed_again(config):
    with FakeTwitter() as fake:
        search = fake.server.routes[SEARCH]
        fake.server.routes[("GET", "/moved" + SEARCH)] = search
        fake.server.routes[("GET", SEARCH)] = lambda req: Response(
            307, b"", headers={"Location": "/moved" + SEARCH + "?" + "&".join(
                f"{k}={quote(v[0])}" for k, v in req.query.items())})
        body = start_body("twitter_search_2", [{"id": "s1", "token": "gwu"}], credentials=USER_AUTH)
        out = finished(lambda: run_harvest_job(config.with_api_url("twitter", fake.url), body))
        moved = fake.server.requests_to("/moved" + SEARCH)
    assert out.status["status"] == "completed success", out.status
    assert moved and all(r.headers["Authorization"].startswith("OAuth ") for r in moved)
    assert out.count("tweets") > 0


@pytest.mark.parametrize("status", [307, 308])
def test_metashare_login_post_redirected_elsewhere_sends_no_password(config, elsewhere, status):
    node = scripted_node({}, {})
    node.routes[("POST", "/login/")] = lambda req: Response(status, b"", {"Location": elsewhere.url + "/login/"})
    with node:
        body = start_body("metashare_sync", [{"id": "node-1", "token": node.url}],
                          credentials={"username": "harvester", "password": USERS["harvester"]})
        out = finished(lambda: run_harvest_job(config, body))
        posts = node.requests_to("/login/")
    assert elsewhere.requests == []
    assert [r.method for r in posts] == ["GET", "POST"]  # the node itself got the form, once
    final = assert_failed_with(out, codes.REDIRECT_REFUSED)
    assert [n["seed_id"] for n in final["errors"]] == ["node-1"]
    assert_nowhere(out, [USERS["harvester"], "tok123"])


def test_generic_next_page_on_another_origin_gets_no_api_key(config, elsewhere):
    with FakeServer() as api:
        api.route("/pages")(lambda req: Response(200, json.dumps(
            {"items": [{"id": 1}, {"id": 2}], "next": elsewhere.url + "/pages?page=2"}).encode()))
        body = start_body("generic_pages", [{"id": "s1", "token": api.url + "/pages"}],
                          credentials={"api_key": API_KEY})
        out = finished(lambda: run_harvest_job(config, body))
        first = api.requests_to("/pages")
    assert elsewhere.requests == []
    assert [r.arg("api_key") for r in first] == [API_KEY]  # the seed's own origin gets it
    assert_failed_with(out, codes.CREDENTIAL_ORIGIN_REFUSED)
    assert warcio_check(warc_files(config.data_root)).returncode == 0  # the first page is in a complete WARC
    assert [status for _, status, _ in out.records()] == [200]
    assert_nowhere(out, [API_KEY])


# --- 2. redirect loops, non-http(s) targets, too many hops: refused at once, not retried by twarc ---

def _redirecting(fake: FakeTwitter, location: Callable[[Request], str]) -> None:
    fake.server.routes[("GET", SEARCH)] = lambda req: Response(302, b"", headers={"Location": location(req)})


@pytest.mark.parametrize("target", ["loop", "file", "hops"])
def test_twarc_redirect_loops_file_urls_and_endless_chains_end_at_once(config, target):
    locations = {
        "loop": lambda req: SEARCH + "?query=gwu&max_results=100",  # back to the same URL
        "file": lambda req: "file:///etc/passwd",
        "hops": lambda req: f"{SEARCH}?query=gwu&hop={int(req.arg('hop', '0')) + 1}",  # every URL new
    }
    with FakeTwitter() as fake:
        _redirecting(fake, locations[target])
        body = start_body("twitter_search_2", [{"id": "s1", "token": "gwu"}], credentials=USER_AUTH)
        out = finished(lambda: run_harvest_job(config.with_api_url("twitter", fake.url), body), seconds=60)
        served = fake.server.requests_to(SEARCH)
    assert_failed_with(out, codes.REDIRECT_REFUSED)
    # each redirect was asked for once, never again by twarc's retries (30 rounds, sleeping 1, 4, 9... s)
    expected = {"loop": 2, "file": 1, "hops": 11}[target]  # hops: the first request and 10 redirects followed
    assert len(served) == expected, [r.query for r in served]


# --- 3. a deadline for every exchange ---

def _drip_body(stop: threading.Event) -> Callable[[object], None]:
    def write(wfile) -> None:
        while not stop.wait(0.2):
            write_chunk(wfile, b" ")  # one byte, then another: every read is within the socket timeout
    return write


class RawServer:
    """A TCP server on 127.0.0.1 speaking HTTP by hand (what FakeServer cannot: dripping headers, lying
    about the length); `answer(conn, request_line)` runs on a thread per connection until `stop`."""

    def __init__(self, answer: Callable[[socket.socket, str], None]) -> None:
        self.answer = answer
        self.stop = threading.Event()
        self.requests: list[str] = []  # the paths asked for
        self.sock = socket.create_server(("127.0.0.1", 0))
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            try:
                line = conn.recv(65536).split(b"\r\n", 1)[0].decode()
                self.requests.append(line.split(" ")[1])
                self.answer(conn, line)
            except OSError:
                return

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.sock.close()


def header_drip(stop: threading.Event) -> Callable[[socket.socket, str], None]:
    """The status line, then one header byte every 0.2 s, forever."""
    def answer(conn: socket.socket, line: str) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nX-Drip: ")
        while not stop.wait(0.2):
            conn.sendall(b"a")
    return answer


def giant(kind: str, stop: threading.Event) -> Callable[[socket.socket, str], None]:
    """1 GiB declared (and a trickle sent), or an endless chunked body."""
    def answer(conn: socket.socket, line: str) -> None:
        if kind == "declared":
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 1073741824\r\n\r\n")
            while not stop.wait(0.2):
                conn.sendall(b"x" * 1024)
            return
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"10000\r\n" + b"x" * 65536 + b"\r\n"
        while not stop.is_set():
            conn.sendall(chunk)
    return answer


@pytest.mark.parametrize("where", ["body", "headers"])
def test_a_dripping_server_is_cut_by_the_deadline_and_the_pages_before_are_kept(config, where):
    stop = threading.Event()
    with FakeServer() as api, RawServer(header_drip(stop)) as drip:
        slow = drip.url + "/pages" if where == "headers" else api.url + "/slow"
        api.route("/pages")(lambda req: Response(200, json.dumps({"items": [{"id": 1}], "next": slow}).encode()))
        api.route("/slow")(lambda req: Response(200, _drip_body(stop)))
        seeds = [{"id": "s1", "token": api.url + "/pages"}]
        body = start_body("generic_pages", seeds, credentials={})
        cfg = dataclasses.replace(config, http_deadline=2.0, http_timeout=30.0)
        try:
            out = finished(lambda: run_harvest_job(cfg, body), seconds=60)
        finally:
            stop.set()
    final = assert_failed_with(out, codes.DEADLINE_EXCEEDED)
    assert "2s" in json.dumps(final["errors"])
    files = warc_files(config.data_root)
    assert files and warcio_check(files).returncode == 0
    assert [status for _, status, _ in out.records()] == [200]  # the first page, recorded before the cut
    assert out.count("items") == 1


# --- 4. every response the suite reads is limited, the unrecorded ones too ---

def _peak_rss_kib() -> int:
    return int(re.search(r"VmHWM:\s+(\d+)", open("/proc/self/status").read()).group(1))


@pytest.mark.parametrize("kind", ["declared", "endless"])
@pytest.mark.parametrize("where", ["twitter_token", "metashare_login"])
def test_token_and_login_answers_are_size_limited_and_memory_stays_bounded(config, where, kind):
    stop = threading.Event()
    limit = 8 * 1024 * 1024
    cfg = dataclasses.replace(config, max_response_bytes=limit)
    with RawServer(giant(kind, stop)) as server:
        if where == "twitter_token":
            cfg = cfg.with_api_url("twitter", server.url)
            body = start_body("twitter_search_2", [{"id": "s1", "token": "gwu"}], credentials=APP_KEYS)
            path = "/oauth2/token"
        else:
            body = start_body("metashare_sync", [{"id": "node-1", "token": server.url}],
                              credentials={"username": "harvester", "password": USERS["harvester"]})
            path = "/login/"
        open("/proc/self/clear_refs", "w").write("5")  # the peak RSS from here on
        before = _peak_rss_kib()
        try:
            out = finished(lambda: run_harvest_job(cfg, body), seconds=60)
        finally:
            stop.set()
        asked = list(server.requests)
    assert asked == [path]
    assert_failed_with(out, codes.RESPONSE_TOO_LARGE)
    assert (_peak_rss_kib() - before) * 1024 < 200 * 1024 * 1024


def test_the_obtained_app_token_is_redacted_from_statuses(config):
    with FakeTwitter() as fake:
        token = fake.server.routes[("POST", "/oauth2/token")]
        obtained = json.loads(token(Request("POST", "/oauth2/token", {}, {"Authorization": "Basic " + base64.b64encode(
            f"{CONSUMER_KEY}:{CONSUMER_SECRET}".encode()).decode()}, b"")).body)["access_token"]

        def echo(req: Request) -> Response:  # a 400 whose problem text quotes the request's Authorization
            detail = f"bad request with {req.headers.get('Authorization')}"
            return Response(400, json.dumps({"title": "Invalid Request", "detail": detail}).encode())

        fake.server.routes[("GET", SEARCH)] = echo
        body = start_body("twitter_search_2", [{"id": "s1", "token": "gwu"}], credentials=APP_KEYS)
        out = finished(lambda: run_harvest_job(config.with_api_url("twitter", fake.url), body))
        searched = fake.server.requests_to(SEARCH)
    assert searched and searched[0].headers["Authorization"] == f"Bearer {obtained}"  # the token was used
    final = assert_failed_with(out, codes.BAD_REQUEST)
    assert "Bearer REDACTED" in json.dumps(final["errors"])
    assert obtained not in json.dumps(out.sent)


# --- 5. cookies go back only to the origin that set them ---

def test_cookies_go_back_only_to_the_origin_that_set_them(config, data_root, elsewhere):
    with FakeServer() as api:
        api.route("/login")(lambda req: Response(200, b"{}", {"Set-Cookie": "sid=cookie-value-4411; Path=/"}))
        api.route("/again")(lambda req: Response(200, b"{}"))
        api.route("/away")(lambda req: Response(302, b"", {"Location": elsewhere.url + "/landing"}))
        start = HarvestStart.from_dict(start_body("generic_pages", [{"id": "s1", "token": api.url + "/login"}],
                                                  credentials={}))
        recorder = Recorder(start=start, config=config, directory=data_root)
        harvest = Harvest(recorder=recorder)
        try:
            harvest.http.get(api.url + "/login")
            harvest.http.get(api.url + "/again")
            harvest.http.get(elsewhere.url + "/direct")  # no credential: another origin may be asked
            harvest.http.get(api.url + "/away")  # ... also through a redirect
            with harvest.unrecorded_session() as session:
                session.get(api.url + "/login")
                session.get(elsewhere.url + "/unrecorded")
        finally:
            recorder.finish(final=True)
            recorder.close()
        again = api.requests_to("/again")
    assert again[0].headers.get("Cookie") == "sid=cookie-value-4411"  # the origin that set it gets it back
    assert [r.path for r in elsewhere.requests] == ["/direct", "/landing", "/unrecorded"]
    assert carried(elsewhere, ["cookie-value-4411"]) == []
