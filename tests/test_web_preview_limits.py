"""The preview's limits (issue 30, items 6 and 7), on `swath web` in a real uvicorn subprocess: a remote that
drips one byte a second is cut at SWATH_WEB_PREVIEW_SECONDS (the page answers while it still drips), runs go
to a bounded pool (one more preview than SWATH_WEB_PREVIEW_SLOTS is 429 web_busy), and an answer the run could
not parse is named by its code, never shown."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from swath.core.config import Config
from swath.messages import codes
from swath.messages.worker import wait_for
from swath.store import Store
from tests.fakes.httpserver import FakeServer, Request, Response, end_chunks, write_chunk
from tests.test_web import make_set
from tests.webkit import login, post, preview, user, web_config
from tests.webprocess import web_process

DRIP_BYTES = 120  # one a second: far longer than the preview's limit below


class Drip:
    """A CKAN API answering one byte a second; `over` is set once the last byte went out."""

    def __init__(self) -> None:
        self.asked, self.over, self.quit = threading.Event(), threading.Event(), threading.Event()
        self.server = FakeServer({path: self.answer for path in ("/api/3/action/status_show",
                                                                 "/api/3/action/package_search")})

    def answer(self, _request: Request) -> Response:
        self.asked.set()
        return Response(200, body=self.drip)

    def drip(self, wfile: Any) -> None:
        for _ in range(DRIP_BYTES):
            if self.quit.wait(1.0):  # the test is over: stop at once
                return
            write_chunk(wfile, b" ")
        end_chunks(wfile)
        self.over.set()


def new_collection(c: httpx.Client, set_id: str, harvest_type: str, url: str) -> str:
    response = post(c, f"/sets/{set_id}/new", {"type": harvest_type, "name": harvest_type, "seeds": url},
                    page=f"/sets/{set_id}")
    assert response.status_code == 303, response.text
    return str(response.headers["location"])


def member(config: Config, base: str) -> httpx.Client:
    store = Store(url=config.db_url)
    user(store, "ada", groups=("lib",))
    store.close()
    c = httpx.Client(base_url=base, follow_redirects=False, timeout=300)
    assert login(c, "ada").status_code == 303
    return c


def test_a_dripping_endpoint_is_cut_at_the_preview_limit_and_previews_share_a_bounded_pool(config: Config) -> None:
    """Issue 30 item 6: a CKAN endpoint sending 1 byte/s made the preview answer after 110 s (limit 60 s)."""
    config = web_config(config)
    drip = Drip()
    answers: dict[str, Any] = {}
    with web_process(config, SWATH_WEB_PREVIEW_SECONDS="8", SWATH_WEB_PREVIEW_SLOTS="1") as web, drip.server:
        c = member(config, web.url)
        collection = new_collection(c, make_set(c, "Portals"), "ckan", drip.server.url)

        def first() -> None:
            answers["first"] = preview(c, collection)
            answers["dripping"] = not drip.over.is_set()

        running = threading.Thread(target=first, name="test-preview")
        running.start()
        try:
            assert wait_for(drip.asked.is_set, 120), "the preview never reached the endpoint"
            second = post(c, f"{collection}/preview", {}, page=collection)  # while the first one holds the pool
            running.join(300)
        finally:
            drip.quit.set()
    assert not running.is_alive()
    assert second.status_code == 429 and codes.WEB_BUSY in second.text
    assert answers["first"].status_code == 200, answers["first"].text
    assert codes.WEB_PREVIEW_DEADLINE in answers["first"].text
    assert answers["dripping"], "the page waited for the remote to finish"


def test_an_answer_the_preview_cannot_parse_is_named_by_its_code_not_shown(config: Config) -> None:
    """Issue 30 item 7: a DCAT collection pointed at an internal text endpoint showed its body in the page."""
    config = web_config(config)
    marker = f"internal note {time.time_ns()}: the vault code is 0000"
    internal = FakeServer({"/notes": lambda _r: Response(200, marker.encode(), content_type="text/plain")})
    with web_process(config, SWATH_WEB_PREVIEW_SECONDS="60") as web, internal:
        c = member(config, web.url)
        collection = new_collection(c, make_set(c, "Catalogs"), "dcat", f"{internal.url}/notes")
        page = preview(c, collection)
    assert internal.requests_to("/notes"), "the preview never asked the endpoint"
    assert page.status_code == 200, page.text
    assert codes.BAD_RESPONSE in page.text
    assert "internal note" not in page.text and "vault" not in page.text
