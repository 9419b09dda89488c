"""The dashboard in headless Chromium (Debian's `chromium`): a seeded job's stats on the page and in a screenshot."""

from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import urllib.request
from pathlib import Path

import orjson
import pika
import pytest

from swath.core.config import Config
from swath.dashboard.server import Dashboard
from swath.messages.broker import (
    DEAD_QUEUE,
    DEAD_REASON_CODE,
    DEAD_REASON_MESSAGE,
    DEAD_ROUTING_KEY,
)
from swath.monitor import record
from swath.store import Store, monitor_repo, repo
from tests.requesterkit import swath
from tests.test_monitor import warc_created
from tests.test_store import status_body

WINDOW = (1280, 1800)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("chromium")
    assert exe, "Debian's chromium is needed for the dashboard tests: apt-get install -y chromium"
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run(
        [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync", "--hide-scrollbars",
         f"--user-data-dir={profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}", *args],
        capture_output=True, text=True, timeout=240, check=True)


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def seeded(config: Config, broker) -> dict:
    """A validated source, one finished job with per-day stats, a warning, two WARCs, a refused and a
    dead-lettered message."""
    src = swath(config, "harvest", "create", "seeded-blog", "--type", "tumblr_blog_posts", "--seed-uid", "b",
                "--credential", "api_key=env:TUMBLR_API_KEY", "--json")  # the type needs api_key
    swath(config, "harvest", "validate", "seeded-blog")
    swath(config, "harvest", "schedule", "seeded-blog", "--every", "6h")
    store = Store(url=config.db_url)
    with store.session() as s:
        job = repo.add_job(s, job_id=f"{src['id']}-seeded", source=repo.find_source(s, src["id"]),
                           routing_key="harvest.start.tumblr.tumblr_blog_posts", trigger="manual")
    stats = {"2024-01-02": {"posts": 17}, "2024-01-03": {"posts": 25, "notes": 3}}
    body = status_body(job.id, "completed success", 0, stats=stats,
                       warnings=[{"code": "token_not_found", "message": "gone.tumblr.com not found"}])
    record(store, "harvest.status.tumblr.tumblr_blog_posts", body)
    for n in (1, 2):
        record(store, "warc_created", warc_created(n, harvest_id=job.id))
    with store.session() as s:
        monitor_repo.record_rejected(s, digest="f" * 40, routing_key="harvest.status.x.y", code="schema_invalid",
                             message="'status' is a required property")
    broker.channel.basic_publish(config.dead_letter_exchange, "export.start.tumblr.nope", b"{}", pika.BasicProperties(
        headers={DEAD_REASON_CODE: "unknown_type", DEAD_REASON_MESSAGE: "no exporter for nope",
                 DEAD_ROUTING_KEY: "export.start.tumblr.nope", DEAD_QUEUE: "q"}))
    totals = {"posts": 17 + 25, "notes": 3}
    yield {"store": store, "job": job.id, "totals": totals, "warc_bytes": 1001 + 1002}
    store.close()


def test_seeded_job_stats_render_in_headless_chromium(config: Config, seeded: dict, tmp_path: Path, broker) -> None:
    dashboard = Dashboard(config=config, store=seeded["store"], port=0, refresh=30).start()
    try:
        dom = chromium(tmp_path, "--dump-dom", dashboard.url).stdout
        shot = tmp_path / "dashboard.png"
        chromium(tmp_path, f"--screenshot={shot}", dashboard.url)
        blank = tmp_path / "blank.png"
        chromium(tmp_path, f"--screenshot={blank}", "about:blank")
    finally:
        dashboard.close()
    assert "seeded-blog" in dom and seeded["job"] in dom
    for label, n in seeded["totals"].items():
        assert f"{n} {label}" in dom
    assert "token_not_found" in dom and "gone.tumblr.com not found" in dom
    assert f"{seeded['warc_bytes']}" in dom  # WARC volume of the collection
    assert "no exporter for nope" in dom and "unknown_type" in dom  # peeked from the dead-letter queue
    assert config.status_queue in dom and "Status messages the monitor refused (1)" in dom
    assert '<noscript><meta http-equiv="refresh" content="30"></noscript>' in dom  # live.js updates it; else reloads
    assert 'data-live-json="/live.json"' in dom
    assert png_size(shot) == png_size(blank) == WINDOW
    assert shot.stat().st_size > 4 * blank.stat().st_size  # the page drew far more than an empty one
    assert broker.depth(config.dead_letter_queue) == 1  # peeking left the dead letter where it was


def test_api_status_and_escaping(config: Config, seeded: dict, broker) -> None:
    swath(config, "harvest", "create", "<script>alert(1)</script>", "--type", "generic_pages")
    dashboard = Dashboard(config=config, store=seeded["store"], port=0).start()
    try:
        page = urllib.request.urlopen(dashboard.url, timeout=60).read().decode()
        api = orjson.loads(urllib.request.urlopen(dashboard.url + "api/status", timeout=60).read())
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(dashboard.url + "nope", timeout=60)
    finally:
        dashboard.close()
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    (job,) = api["recent"]
    assert job["id"] == seeded["job"] and job["totals"] == seeded["totals"]
    queues = {q["name"]: q for q in api["queues"]}
    assert queues[config.dead_letter_queue]["messages"] == 1
    assert queues[config.queue_prefix + "tumblr_harvester"].get("missing") is True  # no worker declared it
    assert api["volume"] == [{"collection_set": "set", "collection": "col", "warcs": 2, "bytes": seeded["warc_bytes"]}]
    once = swath(config, "dashboard", "--once", "--json")
    assert once["rejected_total"] == 1 and [s["name"] for s in once["sources"]][0] == "seeded-blog"


def test_queue_depths_from_the_management_api(config: Config) -> None:
    """The management API path, against a real HTTP server standing in for RabbitMQ's /api/queues/<vhost>."""
    from swath.shared.snapshot import management_queues
    from tests.fakes.httpserver import FakeServer, Response

    ours = [config.status_queue, config.queue_prefix + "tumblr_harvester"]
    rows = [{"name": ours[0], "messages": 3, "consumers": 1}, {"name": ours[1], "messages": 7, "consumers": 2},
            {"name": "someone_elses_queue", "messages": 9, "consumers": 0}]
    server = FakeServer({"/api/queues/%2F": lambda req: Response(200, orjson.dumps(rows))})
    with server:
        host = server.url.removeprefix("http://")
        got = management_queues(f"http://monitor:pa55word@{host}", config)
    assert got == sorted(rows[:2], key=lambda r: r["name"])
    import base64

    (request,) = server.requests
    assert request.headers["Authorization"] == "Basic " + base64.b64encode(b"monitor:pa55word").decode()


def test_a_connection_that_stops_sending_is_closed(config: Config, tmp_path: Path) -> None:
    # a half-sent request must not hold one of the dashboard's threads for ever (one per connection: a slow-loris)
    store = Store(url=f"sqlite:///{tmp_path / 'swath.sqlite'}")
    dashboard = Dashboard(config=config, store=store, port=0, idle_timeout=1.0).start()
    try:
        host, port = dashboard.httpd.server_address[:2]
        with socket.create_connection((host, port), timeout=120) as conn:
            conn.sendall(b"GET /api/status HTTP/1.1\r\nHost: x\r\n")  # the headers never end
            assert conn.recv(1024) == b""  # the dashboard hung up (a client timeout would raise instead)
    finally:
        dashboard.close()
