"""Issue #31 (2, 3, 4): every start-up mistake is one coded line saying what to do (a traceback only under
--debug), and a credential still holding its example placeholder is refused before any request is made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pika
import pika.exceptions
import pytest

from swath.core.config import DEFAULT_AMQP_URL
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.requesterkit import pg_url  # noqa: F401


def swath(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swath", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "SWATH_DB_URL": "", **(env or {})})


def one_coded_line(result: subprocess.CompletedProcess, code: str) -> str:
    """The single stderr line of a refused command, which must carry `code` and no traceback."""
    assert result.returncode != 0, result.stdout
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error [{code}]: "), result.stderr
    return lines[0]


@pytest.fixture
def read_only_root(tmp_path: Path):
    """A real read-only filesystem (a tmpfs mounted ro; CI runs as root, where chmod would not stop a write)."""
    root = tmp_path / "ro"
    root.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(root)], check=True)
    yield root
    subprocess.run(["umount", str(root)], check=True)


def write_json(path: Path, body: dict) -> Path:
    path.write_text(json.dumps(body))
    return path


# ------------------------------------------------------------------ data root


def test_an_impossible_data_root_is_one_line_and_the_traceback_waits_for_debug():
    result = swath("--data-root", "/proc/swath-x", "demo")
    line = one_coded_line(result, "data_root_unwritable")
    assert "/proc/swath-x" in line and "--data-root" in line
    debug = swath("--debug", "--data-root", "/proc/swath-x", "demo")
    assert debug.returncode != 0 and "Traceback" in debug.stderr


def test_a_read_only_data_root_is_one_line_for_demo_harvest_run_export_run_and_workers(read_only_root, tmp_path):
    harvest = write_json(tmp_path / "start.json", {
        "id": "h1", "type": "generic_pages", "path": "collections/cs/c", "seeds": [{"id": "s", "token": "http://127.0.0.1:9/"}],
        "collection_set": {"id": "cs"}, "collection": {"id": "c"}})
    export = write_json(tmp_path / "export.json", {"id": "e1", "type": "tumblr_blog_posts", "collection": {"id": "c"},
                                                   "path": "exports/e1", "format": "csv"})
    env = {"SWATH_DATA_ROOT": str(read_only_root / "data")}
    for args in (["demo"], ["harvest", "run", str(harvest)], ["export", "run", str(export)],
                 ["worker", "generic_harvester"], ["worker", "tumblr_exporter"]):
        line = one_coded_line(swath(*args, env=env), "data_root_unwritable")
        assert str(read_only_root / "data") in line and "Read-only file system" in line, args


# ------------------------------------------------------------------ broker URL


@pytest.mark.parametrize("url", ["not a url", "http://127.0.0.1:5672/", "amqp://guest:s3cret@127.0.0.1:notaport/"])
def test_a_broker_url_that_is_not_amqp_is_refused_before_anything_is_declared(url, broker):
    exchange = f"test_badurl_{uuid.uuid4().hex[:8]}"
    result = swath("broker", "setup", env={"SWATH_AMQP_URL": url, "SWATH_EXCHANGE": exchange,
                                           "SWATH_QUEUE_PREFIX": exchange})
    line = one_coded_line(result, "broker_url_invalid")
    assert "amqp://" in line and "s3cret" not in line
    with pika.BlockingConnection(pika.URLParameters(DEFAULT_AMQP_URL.replace("localhost", "127.0.0.1"))) as conn:
        channel = conn.channel()
        with pytest.raises(pika.exceptions.ChannelClosedByBroker):  # 404: nothing was declared on vhost /
            channel.exchange_declare(exchange, passive=True)


def test_a_worker_with_a_broker_url_that_does_not_parse_says_so_in_one_line():
    one_coded_line(swath("worker", "generic_harvester", env={"SWATH_AMQP_URL": "not a url"}), "broker_url_invalid")


# ------------------------------------------------------------------ database URL


@pytest.mark.parametrize(("url", "driver"), [("postgresql+psycopg://postgres@127.0.0.1/x", "psycopg"),
                                             ("mysql://u@127.0.0.1/x", "mysqldb")])
def test_a_database_url_whose_driver_is_missing_is_one_line(url, driver, tmp_path):
    result = swath("harvest", "sources", env={"SWATH_DATA_ROOT": str(tmp_path), "SWATH_DB_URL": url})
    line = one_coded_line(result, "database_driver_missing")
    assert driver in line and "pip" in line


def test_a_plain_postgresql_url_takes_the_installed_driver(pg_url, tmp_path):  # noqa: F811
    pytest.importorskip("psycopg2")
    plain = pg_url.replace("postgresql+psycopg2://", "postgresql://")
    result = swath("harvest", "sources", "--json", env={"SWATH_DATA_ROOT": str(tmp_path), "SWATH_DB_URL": plain})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == []


# ------------------------------------------------------------------ placeholders and error lines


def test_an_example_placeholder_credential_is_refused_before_any_request(tmp_path):
    with FakeServer() as server:
        env = {"SWATH_DATA_ROOT": str(tmp_path / "data"), "SWATH_TWITTER_API_URL": server.url}
        example = swath("harvest", "example", "twitter_search_2", env=env)
        assert example.returncode == 0, example.stderr
        start = write_json(tmp_path / "start.json", json.loads(example.stdout))
        result = swath("harvest", "run", "--json", str(start), env=env)
    line = one_coded_line(result, "credential_placeholder")
    assert "credentials.bearer_token" in line
    assert result.returncode == 2
    assert json.loads(result.stdout)["error"]["code"] == "credential_placeholder"
    assert server.requests == []  # nothing reached the network


def test_a_refused_credential_is_one_short_line_naming_the_url_once_without_its_query(tmp_path):
    def refuse(req: Request) -> Response:
        return Response(401, b'{"title": "Unauthorized", "status": 401}')

    with FakeServer({"/2/tweets/search/recent": refuse}) as server:
        env = {"SWATH_DATA_ROOT": str(tmp_path / "data"), "SWATH_TWITTER_API_URL": server.url}
        body = json.loads(swath("harvest", "example", "twitter_search_2", env=env).stdout)
        body["credentials"] = {"bearer_token": "a-real-looking-token"}
        result = swath("harvest", "run", str(write_json(tmp_path / "start.json", body)), env=env)
    assert result.returncode == 1 and server.requests
    final = [json.loads(line)["message"] for line in result.stdout.splitlines()][-1]
    (error,) = final["errors"]
    url = f"{server.url}/2/tweets/search/recent"
    asked = next(iter(server.requests[0].query))  # a query parameter twarc sent
    assert error["code"] == "unauthorized" and error["message"].count(url) == 1
    assert asked not in error["message"] and len(error["message"]) < 200
    failed = [line for line in result.stderr.splitlines() if "failed: unauthorized" in line]
    assert failed and all(line.count(url) == 1 and asked not in line for line in failed)


def test_an_error_line_is_capped_however_long_its_message(tmp_path):
    name = "x" * 3000  # an unknown type is quoted in the refusal: a pasted blob must not fill the screen
    result = swath("harvest", "example", name, env={"SWATH_DATA_ROOT": str(tmp_path)})
    line = one_coded_line(result, "unknown_type")
    assert len(line) <= 1000 and line.endswith("…")


def test_a_remote_that_cannot_be_reached_is_named_once_without_its_query(tmp_path):
    with FakeServer() as server:
        closed = server.url  # a port nothing listens on once the server is gone
    start = write_json(tmp_path / "start.json", {
        "id": "gone", "type": "generic_pages", "path": "collections/cs/c",
        "seeds": [{"id": "s", "token": f"{closed}/pages?page=1&filler={'x' * 300}"}],
        "collection_set": {"id": "cs"}, "collection": {"id": "c"}})
    result = swath("harvest", "run", str(start), env={"SWATH_DATA_ROOT": str(tmp_path / "data"),
                                                       "SWATH_HTTP_RETRIES": "0"})
    assert result.returncode == 1, result.stderr
    final = [json.loads(line)["message"] for line in result.stdout.splitlines()][-1]
    (error,) = final["errors"]
    assert error["code"] == "remote_error" and error["message"].count(f"{closed}/pages") == 1
    assert "filler" not in error["message"] and "Connection refused" in error["message"]
