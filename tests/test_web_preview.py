"""The preview (a dry run in the web process) shows the first items the run would harvest, as the dataset
export's columns: title, id, date, URL; worked out from the fake repository's records, deleted ones skipped."""

from __future__ import annotations

import json
import re
from html import unescape

from starlette.testclient import TestClient

from swath.core.config import Config
from swath.harvesters.backends import DRY_RUN_ITEMS
from swath.messages import codes
from swath.store import Store
from tests.fakes.oai import GeneratedRepository
from tests.test_web import make_oai, make_set
from tests.webkit import client, login, post, preview, user, web_config

ROW = re.compile(r"<tr><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td><td>(.*?)</td></tr>")


def test_preview_lists_the_first_items_as_the_export_columns(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    set_id = make_set(c, "Preview")
    repository = GeneratedRepository(count=17, per_page=5, deleted_every=4)
    with repository.server as server:
        collection = make_oai(c, set_id, seeds=f"{server.url}/oai")
        response = preview(c, collection)
    assert response.status_code == 200, response.text
    table = response.text.split('id="first-items"', 1)[1].split("</table>", 1)[0]
    rows = [tuple(unescape(cell) for cell in row) for row in ROW.findall(table)]
    live = [n for n in range(1, repository.count + 1) if not repository.is_deleted(n)][:DRY_RUN_ITEMS]
    assert [(title, rid) for title, rid, _date, _url in rows] == [
        (f"Record {n}", repository.identifier(n)) for n in live]
    assert all(f'href="https://gen.example.org/records/{n}"' in table for n in live)
    assert codes.DRY_RUN_ITEM not in response.text  # shown as the table, not again among the messages
    assert codes.DRY_RUN in response.text


def test_the_result_page_reloads_without_running_the_preview_again(config: Config) -> None:
    """Issue 32 item 12: the preview was the POST's answer, so reloading its page ran it again."""
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", groups=("lib",))
    user(store, "bob", groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    repository = GeneratedRepository(count=7, per_page=5)
    with repository.server as server:
        collection = make_oai(c, make_set(c, "Reload"), seeds=f"{server.url}/oai")
        ran = post(c, f"{collection}/preview", {}, page=collection)
        assert ran.status_code == 303, ran.text  # the preview's answer is a redirect to its result
        first = c.get(ran.headers["location"])
        asked = len(server.requests)
        again = c.get(str(first.url))
        other = TestClient(c.app, base_url="http://testserver", follow_redirects=False)  # the same server
        login(other, "bob")  # of the same group: the result is still only its runner's
        theirs = other.get(str(first.url))
        asked_after = len(server.requests)
    assert asked > 0, "the preview never asked the repository"
    assert again.status_code == 200 and asked_after == asked
    table = again.text.split('id="first-items"', 1)[1].split("</table>", 1)[0]
    assert [unescape(rid) for _t, rid, _d, _u in ROW.findall(table)] == [repository.identifier(n) for n in range(1, 8)]
    assert theirs.status_code == 404
    assert c.get(f"{collection}/preview/not-a-token").status_code == 404


def test_a_remote_url_that_is_not_http_is_not_linked() -> None:
    from swath.web.routes_preview import first_items

    notes = [{"code": codes.DRY_RUN_ITEM, "message": json.dumps({"id": "a", "title": "A", "url": "javascript:x()"})},
             {"code": codes.DRY_RUN_ITEM, "message": "not json"}, {"code": codes.DRY_RUN, "message": "counts"}]
    items, others = first_items(notes)
    assert items == [{"id": "a", "title": "A", "url": None}]
    assert [n["message"] for n in others] == ["not json", "counts"]
