"""Messages on swath's pages come from the server only (Chromium): a `?notice=` in a link shows nothing, and the
message of a change is kept in the session, shown once on the page the change leads to."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.test_web import make_oai, make_set
from tests.webkit import client, login, user, web_config

CRAFTED = "Your account is locked: call 555-0100 with your password"


def test_a_crafted_notice_in_a_link_shows_nothing_and_a_change_says_so_once(config: Config, broker,
                                                                         chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "root", admin=True, groups=("lib",))
    c = client(config, store)
    login(c, "root")
    collection = make_oai(c, make_set(c, "Papers"))
    with site(config, store) as base, logged_in(chromium, base, "root") as page:
        for path in ("/", "/admin", "/ops", "/account", collection):
            page.goto(f"{base}{path}?notice={CRAFTED.replace(' ', '+')}")
            assert page.locator(".notice").count() == 0, path
            assert CRAFTED not in page.content(), path
        page.goto(base + "/admin")
        page.locator("#u-name").fill("bob")
        page.locator("#u-pass").fill("a long enough password")
        page.get_by_role("button", name="Add user").click()
        page.wait_for_url(base + "/admin")  # no message in the URL
        assert page.locator(".notice").inner_text() == "user bob added"
        page.reload()
        assert page.locator(".notice").count() == 0  # shown once
    store.close()
