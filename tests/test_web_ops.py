"""The Operations page on the real broker: dead letters a real worker refused are listed with their ids and
reasons (credentials masked), left in place by looking, and requeued from the page to their original routing
key, which the page then no longer lists."""

from __future__ import annotations

import html
import re

from swath.core.config import Config
from swath.messages import codes
from swath.store import Store
from tests.test_deadletters import SECRET, START_KEY, refused  # noqa: F401
from tests.webkit import client, login, post, user, web_config

ROW = re.compile(r'<input type="hidden" name="id" value="([^"]+)">')


def test_dead_letters_are_shown_masked_and_requeued_from_the_page(config: Config, broker, refused) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    page = c.get("/ops").text
    ids = ROW.findall(page)
    assert len(ids) == len(refused) == broker.depth(config.dead_letter_queue)  # looking left them in place
    for code in refused:
        assert code in page
    assert SECRET not in page  # the credential in the schema-invalid one is never shown
    unknown = ids[list(refused).index(codes.UNKNOWN_TYPE)]

    # nothing is bound for its routing key: the broker returns the copy, the dead letter stays, the page says so
    response = post(c, "/ops/deadletters/requeue", {"id": html.unescape(unknown)}, page="/ops")
    assert response.status_code == 303
    assert response.headers["location"] == "/ops" and broker.depth(config.dead_letter_queue) == 3
    assert "stayed" in c.get("/ops").text  # the flash of the session, on the page it sends you to

    starts = broker.queue(config.queue_prefix + "starts", [START_KEY])
    response = post(c, "/ops/deadletters/requeue", {"id": html.unescape(unknown)}, page="/ops")
    said = c.get(response.headers["location"]).text
    assert f"requeued {html.unescape(unknown)}" in html.unescape(said)
    method, _headers, body = broker.get(starts)
    assert method.routing_key == START_KEY and body == refused[codes.UNKNOWN_TYPE]
    assert broker.depth(config.dead_letter_queue) == len(refused) - 1
    page = c.get("/ops").text
    assert ROW.findall(page) == [i for i in ids if i != unknown]
    assert "requeued" not in c.get("/ops").text  # a flash is shown once
    store.close()
