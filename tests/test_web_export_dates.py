"""Date-filtered exports in Chromium: the export form's date boxes send a bare date; the web turns it into the
date-time an export.start carries (from = start of that day UTC, until = its end), and the export runs to the
end on a real exporter worker with only the items of those days."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import shutil
from pathlib import Path

from swath.core.config import Config
from swath.messages.worker import Worker
from swath.monitor import monitor_worker
from swath.store import Store, repo
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.requesterkit import running, spec_named
from tests.test_export import SFM, expected_items
from tests.test_web import make_set
from tests.webkit import member, post, web_config

WAIT_MS = 180_000  # an export on a busy 2-core machine; the page is polled, never slept on


def test_items_from_and_until_a_day_export_those_whole_days(config: Config, broker, fixtures_dir: Path,
                                                            chromium) -> None:  # noqa: F811
    config = web_config(dataclasses.replace(config, status_interval=0.0))
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Photos")
    warcs = fixtures_dir / SFM / "flickr" / "1"
    photos = expected_items(sorted(warcs.rglob("*.warc.gz"), key=str), "flickr_photo")
    response = post(c, f"/sets/{set_id}/new", {"type": "flickr_user", "name": "Flickr people", "cred.key": "k",
                                               "cred.secret": "s", "seed_uids": photos[0]["owner"]["nsid"]},
                    page=f"/sets/{set_id}")
    assert response.status_code == 303, response.text
    collection = response.headers["location"]
    with store.session() as s:
        src = repo.find_source(s, collection.rsplit("/", 1)[1])
        folder = config.data_root / "collections" / src.collection_set_id / src.collection_id
    shutil.copytree(warcs, folder)  # the collection's harvests, as SFM left them (all harvested on one day)

    posted = sorted({dt.datetime.fromtimestamp(int(p["dates"]["posted"]), dt.UTC).date() for p in photos})
    first, last = posted[1], posted[-2]  # days with photos on both sides of them
    wanted = [p["id"] for p in photos if first <= dt.datetime.fromtimestamp(int(p["dates"]["posted"]), dt.UTC).date()
              <= last]
    assert 0 < len(wanted) < len(photos)
    harvested = dt.date(2016, 2, 22)  # the day in the fixture WARCs' folders and names
    with contextlib.ExitStack() as stack:
        stack.enter_context(running(monitor_worker(config=config, store=store)))
        stack.enter_context(running(Worker(config=config, spec=spec_named("flickr_exporter"))))
        base = stack.enter_context(site(config, Store(url=config.db_url)))
        page = stack.enter_context(logged_in(chromium, base, "ada"))
        page.goto(base + collection)
        page.get_by_label("Export type").select_option("flickr_user")
        page.get_by_label("Format").select_option("dehydrate")
        page.get_by_label("Items from").fill(first.isoformat())
        page.get_by_label("Items until").fill(last.isoformat())
        page.get_by_label("Harvested from").fill(harvested.isoformat())
        page.get_by_label("Harvested until").fill(harvested.isoformat())
        page.get_by_role("button", name="Request export").click()
        page.wait_for_url("**/exports/*")
        page.wait_for_selector('#live .run[data-status^="completed"]', timeout=WAIT_MS)
        assert page.locator("#live .run").get_attribute("data-status") == "completed success", page.content()
        with page.expect_download() as download:
            page.locator('#live a[href*="/files/"]').first.click()
        ids = Path(download.value.path()).read_text().split()
    assert sorted(ids) == sorted(wanted)
    store.close()


def test_a_date_that_is_not_one_is_refused_naming_its_box(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Photos")
    response = post(c, f"/sets/{set_id}/new", {"type": "flickr_user", "name": "Flickr", "cred.key": "k",
                                               "cred.secret": "s", "seed_uids": "1@N01"}, page=f"/sets/{set_id}")
    collection = response.headers["location"]
    response = post(c, f"{collection}/export", {"type": "flickr_user", "format": "csv",
                                                "harvest_date_end": "last tuesday"}, page=collection)
    assert response.status_code == 400 and "Harvested until" in response.text and "last tuesday" in response.text
    store.close()
