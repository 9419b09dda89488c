"""The status pages update in place (Chromium): no meta refresh (a WCAG timing failure, the whole page again every
10 s); static/live.js fetches the changing parts as JSON (/status/live.json) and replaces those that changed. A
harvest status published while the page is open shows without the page being loaded again, the parts that did
not change are the same nodes, the scroll position stays, and a lost connection is said plainly."""

from __future__ import annotations

import contextlib

from swath.core.config import Config
from swath.messages.worker import wait_for
from swath.monitor import monitor_worker
from swath.store import Store, repo
from swath.store.models import RUNNING, SUCCESS
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.requesterkit import running
from tests.test_store import status_body
from tests.test_web import make_oai, make_set
from tests.webkit import member, web_config

STATUS_KEY = "harvest.status.oai_pmh.oai_pmh"


def test_a_status_published_while_the_page_is_open_shows_in_place(config: Config, broker, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Papers")
    for n in range(8):  # rows enough to scroll
        make_oai(c, set_id, name=f"Repository {n}")
    with store.session() as s:
        src = next(x for x in repo.list_sources(s) if x.name == "Repository 0")
        job = repo.add_job(s, job_id="live-run-1", source=src, routing_key="harvest.start.oai_pmh.oai_pmh",
                           trigger="manual")
    with contextlib.ExitStack() as stack:
        monitor = stack.enter_context(running(monitor_worker(config=config, store=store)))
        server = stack.enter_context(contextlib.ExitStack())
        base = server.enter_context(site(config, store))
        page = stack.enter_context(logged_in(chromium, base, "ada"))
        page.set_viewport_size({"width": 1000, "height": 420})
        page.goto(base + "/status")
        assert page.locator('meta[http-equiv="refresh"]').count() == 0
        running_part = page.locator('[data-part="running"]')
        assert job.id in running_part.inner_text() and "queued" in running_part.inner_text()
        page.evaluate("""() => { window.loadedOnce = true;  // gone if the page were loaded again
            window.sourcesTable = document.querySelector('[data-part="sources"] table');
            document.getElementById('exports').scrollIntoView(); }""")
        before = page.evaluate("[window.scrollY, document.getElementById('exports').getBoundingClientRect().top]")
        assert before[0] > 0

        broker.publish(STATUS_KEY, status_body(job.id, RUNNING, 7))
        assert wait_for(lambda: monitor.processed >= 1, 120), "the monitor recorded nothing"
        page.wait_for_selector('[data-part="running"] :text("7 posts")', timeout=120_000)
        assert "running" in running_part.inner_text()
        assert page.evaluate("window.loadedOnce") is True and page.url == base + "/status"
        assert page.evaluate("document.querySelector('[data-part=\"sources\"] table') === window.sourcesTable")
        after = page.evaluate("[window.scrollY, document.getElementById('exports').getBoundingClientRect().top]")
        assert after[0] > 0 and round(after[1]) == round(before[1])  # the heading read stays where it was
        assert page.locator("#live-state").inner_text().startswith("Updated")

        broker.publish(STATUS_KEY, status_body(job.id, SUCCESS, 9))  # the run ends: from "running" to "recent"
        page.wait_for_selector('[data-part="recent"] :text("9 posts")', timeout=120_000)
        assert job.id not in running_part.inner_text() and page.evaluate("window.loadedOnce") is True

        server.close()  # the application goes away: the page says so, and keeps what it showed
        page.wait_for_selector("#live-state.lost", timeout=120_000)
        assert page.locator("#live-state").inner_text().startswith("Connection lost")
        assert "9 posts" in page.locator('[data-part="recent"]').inner_text()
    store.close()


def test_the_page_stops_asking_while_its_tab_is_hidden_and_catches_up_when_shown(config: Config, chromium) -> None:  # noqa: F811
    """While hidden, the page asks nothing however long it stays so (it counts the seconds since its last
    update itself: no sleep here); shown again, it asks at once and shows what changed meanwhile."""
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Papers")
    make_oai(c, set_id, name="First repository")
    asked: list[str] = []
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        page.on("request", lambda r: asked.append(r.url) if "/status/live.json" in r.url else None)
        page.goto(base + "/status")
        page.wait_for_selector("#live[data-updated]")  # the first update came
        page.evaluate("""() => { Object.defineProperty(document, 'hidden', {value: true, configurable: true});
            document.dispatchEvent(new Event('visibilitychange')); }""")
        before = len(asked)
        assert page.locator("#live-state").inner_text().endswith("paused while this tab is hidden.")
        make_oai(c, set_id, name="Second repository")
        # three of the page's 10 s intervals go by, hidden (the page's own record of its last update)
        page.wait_for_function("() => Date.now() - window.swathLive[0].updated >= 30000", timeout=120_000)
        assert len(asked) == before and "Second repository" not in page.locator("#live").inner_text()
        page.evaluate("""() => { Object.defineProperty(document, 'hidden', {value: false, configurable: true});
            document.dispatchEvent(new Event('visibilitychange')); }""")
        page.wait_for_selector('#live :text("Second repository")', timeout=60_000)
        assert len(asked) == before + 1  # one request, at once, not one per missed interval
    store.close()


def test_the_operations_page_shows_a_new_worker_in_place(config: Config, broker, chromium) -> None:  # noqa: F811
    """The Operations page updates the same way: a worker's status recorded by the monitor while it is open
    shows in its services part; the page is not loaded again and its other parts are the same nodes."""
    from swath.monitor import record
    from tests.webkit import user

    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "root", admin=True, groups=("lib",))
    with site(config, store) as base, logged_in(chromium, base, "root") as page:
        page.goto(base + "/ops")
        assert "No worker or exporter has reported yet." in page.locator('[data-part="services"]').inner_text()
        page.evaluate("""() => { window.loadedOnce = true;
            window.diskPart = document.querySelector('[data-part="disk"]').firstElementChild; }""")
        record(store, STATUS_KEY, status_body("ops-run", RUNNING, 1, service="OAI-PMH Harvester", host="worker-9",
                                              instance="42"))
        page.wait_for_selector('[data-part="services"] :text("worker-9")', timeout=120_000)
        assert page.evaluate("window.loadedOnce") is True and page.url == base + "/ops"
        assert page.evaluate("document.querySelector('[data-part=\"disk\"]').firstElementChild === window.diskPart")
        assert page.locator("#ops-state").inner_text().startswith("Updated")
    store.close()
