"""What the harvest session takes from the environment (harvesters/session_env.py): never a ~/.netrc login;
the proxies the environment names, as requests would use them."""

from __future__ import annotations

import base64

import pytest
import requests
from requests.adapters import HTTPAdapter

from swath.harvesters.guard import guard_session
from swath.harvesters.session_env import CaPathOnce
from tests.fakes.httpserver import FakeServer, Response
from tests.test_engine_http import recording

PROXY_VARS = ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
              "NO_PROXY", "no_proxy")


@pytest.fixture
def server():
    with FakeServer() as srv:
        srv.route("/oai")(lambda request: Response(200, b"<OAI-PMH/>", content_type="text/xml"))
        yield srv


@pytest.fixture
def clean_env(monkeypatch):
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_a_netrc_login_for_the_host_is_not_sent(config, data_root, server, clean_env, tmp_path):
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login harvester password hunter2\n")
    netrc.chmod(0o600)
    clean_env.setenv("NETRC", str(netrc))
    with recording(config, data_root, seed=server.url) as recorder:
        assert recorder.http.get(server.url + "/oai").status_code == 200
    (request,) = server.requests_to("/oai")
    assert "Authorization" not in request.headers
    leaked = base64.b64encode(b"harvester:hunter2").decode()
    assert all(leaked not in value for value in request.headers.values())


def test_a_plain_requests_session_would_have_sent_it(server, clean_env, tmp_path):
    # the test above is only worth something if requests, left to itself, reads this file
    netrc = tmp_path / "netrc"
    netrc.write_text("machine 127.0.0.1 login harvester password hunter2\n")
    clean_env.setenv("NETRC", str(netrc))
    with requests.Session() as session:
        session.get(server.url + "/oai")
    (request,) = server.requests_to("/oai")
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"harvester:hunter2").decode()


def test_the_environments_http_proxy_is_used(config, data_root, server, clean_env):
    clean_env.setenv("HTTP_PROXY", server.url)  # the fake answers a proxied GET http://host/path like any other
    with recording(config, data_root) as recorder:
        assert recorder.http.get("http://archive.invalid/oai").content == b"<OAI-PMH/>"
    (request,) = server.requests_to("/oai")
    assert request.headers["Host"] == "archive.invalid"


def test_no_proxy_names_a_host_that_is_reached_directly(server, clean_env):
    clean_env.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens there: used, it would fail
    clean_env.setenv("NO_PROXY", "127.0.0.1")
    with guard_session(requests.Session()) as session:
        assert session.get(server.url + "/oai").status_code == 200
    assert len(server.requests_to("/oai")) == 1


@pytest.mark.parametrize("verify", ["file", "dir", True, False])
def test_a_ca_path_is_judged_as_requests_judges_it(tmp_path, verify):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    given = str(tmp_path / verify) if isinstance(verify, str) else verify
    for url in ("http://example.org/a", "https://example.org:8443/b"):
        request = requests.Request("GET", url).prepare()
        ours, theirs = CaPathOnce(), HTTPAdapter()
        assert (ours.build_connection_pool_key_attributes(request, given)
                == theirs.build_connection_pool_key_attributes(request, given))
