"""Every main page of the web application in a real Chromium at 1280×800 (and the status page at 1400 px, where
the issue saw it overflow): nothing wider than the window, no table wider than its container, no cell whose
content spills out of it, and every form control with an accessible name. The status page shows names, human
dates and the exports. Screenshots of each page go to $SWATH_SCREENSHOTS (as the end-to-end test's do)."""

from __future__ import annotations

import contextlib

import pytest

from swath.core.config import Config
from swath.monitor import record
from swath.store import Store, repo
from swath.web.app import create_app
from swath.web.auth import add_user
from tests.requesterkit import swath
from tests.test_store import status_body
from tests.test_web_e2e import CHROMIUM, log_in_and_make_a_set, new_collection, serving, shot
from tests.webkit import PASSWORD, web_config

pytestmark = pytest.mark.skipif(not CHROMIUM, reason="needs Debian's chromium (dev/services.sh)")

# what spills: the page past the window, a table past its container, a cell's content past the cell
LAYOUT = """() => {
  const out = {page: document.scrollingElement.scrollWidth - window.innerWidth, tables: [], cells: []};
  const name = e => (e.closest('table') && e.closest('table').previousElementSibling || {}).textContent + ': '
                    + e.textContent.trim().slice(0, 60);
  for (const t of document.querySelectorAll('table')) {
    if (t.getBoundingClientRect().width > t.parentElement.clientWidth + 1) out.tables.push(name(t));
  }
  for (const c of document.querySelectorAll('td, th')) {
    if (c.scrollWidth > c.clientWidth + 1) out.cells.push(name(c));
  }
  return out;
}"""

# form controls a user fills in with no accessible name: no <label for>, no wrapping label, no aria-label(ledby)
UNLABELLED = """() => [...document.querySelectorAll('input, select, textarea')]
  .filter(e => e.type !== 'hidden' && e.labels.length === 0 && !e.getAttribute('aria-label')
               && !e.getAttribute('aria-labelledby'))
  .map(e => e.outerHTML.slice(0, 120))"""

LONG_WARNING = "the remote answered https://oai.example.org/oai?token=" + "A" * 240 + " and the harvest went on"


def check(page, name: str) -> None:
    layout = page.evaluate(LAYOUT)
    assert layout == {"page": layout["page"], "tables": [], "cells": []} and layout["page"] <= 0, (name, layout)
    assert page.evaluate(UNLABELLED) == [], name


def test_every_main_page_fits_1280_px_and_labels_its_controls(config: Config, broker) -> None:
    from playwright.sync_api import sync_playwright

    config = web_config(config)
    swath(config, "broker", "setup")
    store = Store(url=config.db_url)
    add_user(store, name="archivist", password=PASSWORD, is_admin=True, groups=["Special Collections"])
    reader = add_user(store, name="reader", password=PASSWORD, is_admin=False, groups=["Special Collections"])
    with contextlib.ExitStack() as stack:
        stack.callback(store.close)
        base = stack.enter_context(serving(create_app(config=config, store=Store(url=config.db_url))))
        play = stack.enter_context(sync_playwright())
        browser = play.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        stack.callback(browser.close)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.set_default_timeout(60_000)
        page.goto(base + "/login")
        set_url = log_in_and_make_a_set(page, base)

        new_collection(page, set_url, "oai_pmh", "University repository", "https://oai.example.org/oai")
        pages = [("03-collection-form-oai", page.url)]
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
        collection_url = page.url
        source_id = collection_url.rsplit("/", 1)[1]

        # a finished run with microsecond timestamps, a long unbroken warning and a WARC in the collection
        with store.session() as s:
            src = repo.find_source(s, source_id)
            job_id = repo.add_job(s, job_id=f"{source_id}-20240102T000000123456", source=src, trigger="manual",
                                  routing_key="harvest.start.oai_pmh.oai_pmh").id
            set_id, collection_id, seed_id = src.collection_set_id, src.collection_id, src.seeds[0]["id"]
        record(store, "harvest.status.oai_pmh.oai_pmh", status_body(
            job_id, "completed success", 7, date_started="2024-01-02T00:00:00.123456+00:00",
            date_ended="2024-01-02T00:05:09.654321+00:00",
            warnings=[{"code": "bad_response", "message": LONG_WARNING}]))
        record(store, "warc_created", {
            "warc": {"path": f"/data/collections/{set_id}/{collection_id}/1.warc.gz", "sha1": "1" * 40,
                     "bytes": 4096, "id": "warc-1", "date_created": "2024-01-02T00:05:00+00:00"},
            "collection_set": {"id": set_id}, "collection": {"id": collection_id},
            "harvest": {"id": job_id, "type": "oai_pmh"}})

        # an export request (no exporter runs here: it stays queued, which its page shows)
        page.goto(collection_url)
        page.get_by_label("Format").select_option("csv")
        page.get_by_role("button", name="Request export").click()
        page.wait_for_url("**/exports/*")
        pages += [("06-export", page.url)]

        pages += [("00-home", base + "/"), ("02-set", set_url), ("04-collection", collection_url),
                  ("04b-seed", f"{collection_url}/seeds/{seed_id}"),
                  ("05-run-finished", f"{base}/runs/{job_id}"), ("07-exports", base + "/exports"),
                  ("09-operations", base + "/ops"), ("10-accounts", base + "/admin"),
                  ("10b-account-of-a-user", f"{base}/admin/users/{reader.id}"),
                  ("11-account", base + "/account"), ("12-status", base + "/status")]
        for name, url in pages:
            page.goto(url)
            shot(page, name)
            check(page, name)

        # the status page: names instead of ids, dates without microseconds, the export and who asked
        text = page.locator("main").inner_text()
        assert "University repository in Research data" in text
        assert "2024-01-02 00:00 UTC" in text and "2024-01-02 00:05 UTC" in text and "123456+" not in text
        exports = page.locator("#exports + table").inner_text()
        assert "archivist" in exports and "University repository" in exports and "oai_pmh" in exports
        assert LONG_WARNING in page.locator("#recent + table").inner_text()
        volume = page.locator("#volume + table tbody td").first.inner_text()
        assert volume == "University repository in Research data" and collection_id not in volume
        page.set_viewport_size({"width": 1400, "height": 800})
        page.reload()
        check(page, "12-status at 1400 px")
