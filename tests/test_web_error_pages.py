"""Error pages say what to do in the browser, not on a command line (Chromium): starting a harvest from a stale
page while one is queued answers without `swath harvest cancel …`, with a button back to the collection page,
whose Cancel button does it."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.requesterkit import swath
from tests.test_web import make_oai, make_set
from tests.webkit import client, login, post, user, web_config


def test_a_refusal_names_no_command_and_leads_back_to_the_buttons(config: Config, broker,
                                                                   chromium) -> None:  # noqa: F811
    config = web_config(config)
    swath(config, "broker", "setup")  # the queue the run waits in (no worker consumes it here)
    store = Store(url=config.db_url)
    user(store, "root", admin=True, groups=("lib",))
    c = client(config, store)
    login(c, "root")
    collection = make_oai(c, make_set(c, "Papers"), name="Theses")
    assert post(c, f"{collection}/validate", {"decision": "accept"}, page=collection).status_code == 303
    with site(config, store) as base, logged_in(chromium, base, "root") as page:
        page.goto(base + collection)  # shows "Start harvest now"; meanwhile a run is queued elsewhere
        started = post(c, f"{collection}/start", {}, page=collection)
        assert started.status_code == 303, started.text
        page.get_by_role("button", name="Start harvest now").click()
        alert = page.get_by_role("alert").inner_text()
        assert "queued" in alert and "swath " not in alert and "`" not in alert, alert
        page.get_by_role("link", name="Back to the page you were on").click()
        page.wait_for_url(base + collection)
        assert page.get_by_role("button", name="Cancel").is_visible()
    store.close()
