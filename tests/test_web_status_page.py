"""The web's status page updates in place (Chromium): no meta refresh (a WCAG timing failure, the whole page
again every 10 s), its changing part fetched by static/live.js; a collection made meanwhile appears without the
page being loaded again."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.test_web import make_oai, make_set
from tests.webkit import member, web_config


def test_the_status_page_updates_its_part_without_reloading(config: Config, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Papers")
    make_oai(c, set_id, name="First repository")
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        page.goto(base + "/status")
        assert page.locator('meta[http-equiv="refresh"]').count() == 0
        assert "First repository" in page.locator("#live").inner_text()
        page.evaluate("window.loadedOnce = true")  # gone if the page were loaded again
        make_oai(c, set_id, name="Second repository")
        page.wait_for_selector('#live :text("Second repository")', timeout=120_000)
        assert page.evaluate("window.loadedOnce") is True and page.url == base + "/status"
    store.close()
