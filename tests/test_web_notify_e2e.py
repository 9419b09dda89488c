"""In a real Chromium: a member finds Notifications from their account page, chooses an address and two events,
saves, and sees them kept; the page and the Operations page (with a worker, its replacement and an exporter
listed) fit 1280 px and label every control (test_web_layout's checks). Screenshots go to $SWATH_SCREENSHOTS."""

from __future__ import annotations

import contextlib

import pytest

from swath.core.config import Config
from swath.monitor import record
from swath.store import Store
from swath.store.notify_models import EXPORT_READY, HARVEST_FAILED, STREAM_STOPPED
from swath.web.app import create_app
from swath.web.auth import add_user
from tests.test_web_e2e import CHROMIUM, chromium_page, serving, shot
from tests.test_web_layout import check
from tests.test_web_ops_services import EXPORT_KEY, PAGES_KEY, exporter, harvester
from tests.webkit import PASSWORD, web_config

pytestmark = pytest.mark.skipif(not CHROMIUM, reason="needs Debian's chromium (dev/services.sh)")


def test_a_member_chooses_notifications_in_the_browser(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    add_user(store, name="archivist", password=PASSWORD, is_admin=True, groups=["Special Collections"])
    record(store, PAGES_KEY, harvester("h1", "101"))
    record(store, PAGES_KEY, harvester("h2", "202"))
    record(store, EXPORT_KEY, exporter("e1", "7"))
    with contextlib.ExitStack() as stack:
        stack.callback(store.close)
        base = stack.enter_context(serving(create_app(config=config, store=Store(url=config.db_url))))
        page = chromium_page(stack)
        page.goto(base + "/login")
        page.get_by_label("User name").fill("archivist")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(base + "/")

        page.goto(base + "/account")
        page.get_by_role("link", name="Notifications").click()
        page.wait_for_url("**/account/notifications")
        page.get_by_label("E-mail address").fill("archivist@example.org")
        page.get_by_label("A harvest of my group's collections fails").check()
        page.get_by_label("An export of my group's collections is ready").check()
        page.get_by_role("button", name="Save").click()
        page.wait_for_url("**/account/notifications?saved=1")
        assert "saved" in page.get_by_role("status").inner_text()
        assert page.get_by_label("E-mail address").input_value() == "archivist@example.org"
        boxes = {kind: page.locator(f"#{kind}").is_checked() for kind in (HARVEST_FAILED, STREAM_STOPPED, EXPORT_READY)}
        assert boxes == {HARVEST_FAILED: True, STREAM_STOPPED: False, EXPORT_READY: True}
        shot(page, "13-notifications")
        check(page, "13-notifications")

        page.goto(base + "/ops")
        text = page.locator("main").inner_text()
        assert "replaced by 202" in text and "Tumblr Exporter" in text and "free" in text
        shot(page, "09b-operations-services")
        check(page, "09b-operations-services")
