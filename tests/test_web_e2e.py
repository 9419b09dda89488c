"""The web application end to end in a real Chromium (Playwright driving Debian's chromium), on the real broker
and store, with real workers and the monitor: log in, make a collection set, an OAI-PMH collection and a Tumblr
one against the local fakes, add seeds, start harvests and watch them finish on the live run page, request a CSV
export and download it, start a stream and stop it. A screenshot of each main page goes to $SWATH_SCREENSHOTS
(default: build/screenshots/ in this checkout)."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from swath.core.config import Config
from swath.messages.worker import Worker, wait_for
from swath.monitor import monitor_worker
from swath.store import Store, repo
from swath.web.app import create_app
from swath.web.auth import add_user
from tests.enginekit import StreamApi
from tests.fakes.httpserver import FakeServer
from tests.fakes.oai import GeneratedRepository
from tests.fakes.tumblr import API_KEY, FakeTumblr
from tests.requesterkit import running, spec_named, swath
from tests.webkit import PASSWORD, web_config

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
WAIT_MS = 180_000  # a harvest on a busy 2-core machine; the page is polled, never slept on
SHOTS = Path(os.environ.get("SWATH_SCREENSHOTS") or Path(__file__).resolve().parents[1] / "build" / "screenshots")

pytestmark = pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="needs Debian's chromium (dev/services.sh)")


@contextlib.contextmanager
def serving(app: object) -> Iterator[str]:
    """The app on a real uvicorn on 127.0.0.1, port 0 (a free one); yields its base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning"))  # type: ignore[arg-type]
    thread = threading.Thread(target=server.run, daemon=True, name="test-web")
    thread.start()
    assert wait_for(lambda: server.started, 60), "uvicorn did not start"
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def chromium_page(stack: contextlib.ExitStack, *, width: int = 1280, height: int = 800, **options: object):
    """A page of a headless Debian chromium that closes with `stack`, waiting at most 60 s for anything."""
    from playwright.sync_api import sync_playwright

    browser = stack.enter_context(sync_playwright()).chromium.launch(executable_path=CHROMIUM, headless=True,
                                                                     args=["--no-sandbox"])
    stack.callback(browser.close)
    page = browser.new_page(viewport={"width": width, "height": height}, **options)
    page.set_default_timeout(60_000)
    return page


def shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def new_collection(page, set_url: str, harvest_type: str, name: str, seeds: str, **fields: str) -> str:
    page.goto(set_url)
    page.get_by_label("Harvest type").select_option(harvest_type)
    page.get_by_role("button", name="Next: settings").click()
    page.get_by_label("Name", exact=True).fill(name)
    page.locator("#seeds").fill(seeds)
    for selector, value in fields.items():
        locator = page.locator(f"#{selector}")
        if locator.evaluate("e => e.tagName") == "SELECT":
            locator.select_option(value)
        else:
            locator.fill(value)
    return page.url


def log_in_and_make_a_set(page, base: str) -> str:
    """From the login page: log in as archivist, make the collection set "Research data"; its URL."""
    page.get_by_label("User name").fill("archivist")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/")
    page.get_by_label("Name", exact=True).fill("Research data")
    page.get_by_role("button", name="Create collection set").click()
    page.wait_for_url("**/sets/research-data")
    return page.url


def run_to_end(page, collection_url: str) -> str:
    """Accept the collection, start it, wait on its live run page for the final status; the run page's URL."""
    page.goto(collection_url)
    page.get_by_role("button", name="Accept").click()
    page.get_by_role("button", name="Start harvest now").click()
    page.wait_for_url("**/runs/*")
    page.wait_for_selector('#live .run[data-status^="completed"]', timeout=WAIT_MS)
    return page.url


def test_from_login_to_a_downloaded_export_in_chromium(config: Config, broker) -> None:
    from playwright.sync_api import sync_playwright

    config = web_config(config)
    swath(config, "broker", "setup")  # every worker queue exists, also those no worker here consumes
    store = Store(url=config.db_url)
    add_user(store, name="archivist", password=PASSWORD, is_admin=True, groups=["Special Collections"])
    tumblr, oai = FakeTumblr(), GeneratedRepository(count=23, per_page=10)
    stream_server = FakeServer()
    StreamApi(stream_server, every=0.05)
    workers_config = config.with_api_url("tumblr", tumblr.url)
    workers = [Worker(config=workers_config, spec=spec_named(name)) for name in
               ("tumblr_harvester", "oai_pmh_harvester", "generic_harvester", "tumblr_exporter")]
    with contextlib.ExitStack() as stack:
        for server in (tumblr, oai.server, stream_server):
            stack.enter_context(server)
        stack.enter_context(running(monitor_worker(config=config, store=store)))
        for worker in workers:
            stack.enter_context(running(worker))
        base = stack.enter_context(serving(create_app(config=config, store=Store(url=config.db_url))))
        play = stack.enter_context(sync_playwright())
        browser = play.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        stack.callback(browser.close)
        page = browser.new_page(viewport={"width": 1280, "height": 900}, accept_downloads=True)
        page.set_default_timeout(60_000)

        # log in
        page.goto(base + "/")
        page.wait_for_url("**/login?next=/")
        shot(page, "01-login")
        set_url = log_in_and_make_a_set(page, base)  # "Research data"

        # an OAI-PMH collection from its schema form, harvested to the end on the live run page
        new_collection(page, set_url, "oai_pmh", "University repository", f"{oai.server.url}/oai",
                       **{"opt-incremental": "false", "opt-metadataPrefix": "oai_dc"})
        shot(page, "03-collection-form-oai")
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
        oai_url = page.url
        page.get_by_role("button", name="Preview (dry run)").click()  # before validation: it writes nothing
        page.wait_for_url("**/preview/*")  # the result's own page (Post/Redirect/Get)
        assert f"{oai.count} done" in page.locator("#totals").inner_text()
        shot(page, "04b-preview")
        oai_run = run_to_end(page, oai_url)
        oai_job = repo_job(store, oai_run)
        assert oai_job.status == "completed success", oai_job.errors
        assert oai_job.warcs_count >= 1
        assert f"{oai.count} done" in page.locator("#totals").inner_text(), oai_job.stats

        # a Tumblr collection: credential typed once, never shown again; a second seed added in bulk later
        new_collection(page, set_url, "tumblr_blog_posts", "GW libraries blog", "gwulibraries",
                       **{"cred-api_key": API_KEY})
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
        tumblr_url = page.url
        assert API_KEY not in page.content()
        page.locator("#more-seeds").fill("archive.example.org\n")
        page.get_by_role("button", name="Add seeds").click()
        page.wait_for_selector("text=archive.example.org")
        run_url = run_to_end(page, tumblr_url)
        shot(page, "05-run-finished")
        expected = {str(p["id"]) for host in tumblr.blogs for p in tumblr.expected_posts(host)}
        totals = page.locator("#totals").inner_text()
        assert f"{len(expected)} posts" in totals, totals
        assert "WARCs (" in page.content() and ".warc.gz" in page.content()
        job = repo_job(store, run_url)
        assert job.status == "completed success" and job.warcs_count >= 1

        # a CSV export of it, watched and downloaded
        page.goto(tumblr_url)
        shot(page, "04-collection")
        page.get_by_label("Export type").select_option("tumblr_blog_posts")
        page.get_by_label("Format").select_option("csv")
        page.get_by_label("Drop duplicate items").check()
        page.get_by_role("button", name="Request export").click()
        page.wait_for_url("**/exports/*")
        link = page.wait_for_selector('#live a[href*="/files/"]', timeout=WAIT_MS)
        assert link is not None
        shot(page, "06-export")
        with page.expect_download() as download_info:
            page.locator('#live a[href*="/files/"]').first.click()
        download = download_info.value
        rows = list(csv.DictReader(io.StringIO(Path(download.path()).read_text("utf-8"))))
        assert {r["tumblr_id"] for r in rows} == expected and len(rows) == len(expected)
        page.goto(base + "/exports")
        assert "archivist" in page.content() and "tumblr_blog_posts" in page.content()
        shot(page, "07-exports")

        # a stream: started, seen counting on the live page, stopped from it
        new_collection(page, set_url, "generic_stream", "Live feed", f"{stream_server.url}/stream")
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
        stream_url = page.url
        page.get_by_role("button", name="Accept").click()
        page.get_by_role("button", name="Start harvest now").click()
        page.wait_for_url("**/runs/*")
        page.wait_for_selector('#live .run[data-status="running"] .total[data-label="items"]', timeout=WAIT_MS)
        shot(page, "08-stream-running")
        page.get_by_role("button", name="Stop").click()
        page.wait_for_url("**/runs/*")
        page.wait_for_selector('#live .run[data-status^="completed"]', timeout=WAIT_MS)
        stream_job = repo_job(store, page.url)
        assert stream_job.status == "completed success", stream_job.errors
        assert stream_job.stop_requested_at is not None and stream_job.stats
        page.goto(stream_url)
        assert "stopped the harvest" in page.content() and "started a harvest" in page.content()

        # a run no worker takes (no CKAN harvester runs here): the page says so, and it is cancelled from it
        new_collection(page, set_url, "ckan", "Open data portal", "http://127.0.0.1:9/ckan")
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
        page.get_by_role("button", name="Accept").click()
        page.get_by_role("button", name="Start harvest now").click()
        page.wait_for_url("**/runs/*")
        assert "No worker consumes queue" in page.locator(".notice").inner_text()
        queue = f"{config.queue_prefix}ckan_harvester"
        assert broker.depth(queue) == 1
        page.get_by_role("button", name="Cancel").click()
        page.wait_for_selector('#live .run[data-status="cancelled"]')
        assert broker.depth(queue) == 0  # its harvest.start was taken out of the queue
        assert repo_job(store, page.url).status == "cancelled"

        # the other main pages
        page.goto(set_url)
        assert page.locator("table.list").first.get_by_role("link", name="University repository").is_visible()
        shot(page, "02-set")
        for name, path in (("00-home", "/"), ("09-operations", "/ops"), ("10-accounts", "/admin"),
                           ("11-account", "/account")):
            page.goto(base + path)
            shot(page, name)
        assert "Workers seen" in page.content() or path != "/ops"
    store.close()


def repo_job(store: Store, run_url: str):
    with store.session() as s:
        return repo.get_job(s, run_url.rstrip("/").rsplit("/", 1)[1])
