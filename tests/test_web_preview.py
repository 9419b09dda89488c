"""The preview (a dry run in the web process) shows the first items the run would harvest, as the dataset
export's columns: title, id, date, URL; worked out from the fake repository's records, deleted ones skipped."""

from __future__ import annotations

import json
import re
from html import unescape

from swath.core.config import Config
from swath.harvesters.backends import DRY_RUN_ITEMS
from swath.messages import codes
from swath.store import Store
from tests.fakes.oai import GeneratedRepository
from tests.test_web import make_oai, make_set
from tests.webkit import client, login, post, user, web_config

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
        response = post(c, f"{collection}/preview", {}, page=collection)
    assert response.status_code == 200, response.text
    table = response.text.split('id="first-items"', 1)[1].split("</table>", 1)[0]
    rows = [tuple(unescape(cell) for cell in row) for row in ROW.findall(table)]
    live = [n for n in range(1, repository.count + 1) if not repository.is_deleted(n)][:DRY_RUN_ITEMS]
    assert [(title, rid) for title, rid, _date, _url in rows] == [
        (f"Record {n}", repository.identifier(n)) for n in live]
    assert all(f'href="https://gen.example.org/records/{n}"' in table for n in live)
    assert codes.DRY_RUN_ITEM not in response.text  # shown as the table, not again among the messages
    assert codes.DRY_RUN in response.text


def test_a_remote_url_that_is_not_http_is_not_linked() -> None:
    from swath.web.routes_preview import first_items

    notes = [{"code": codes.DRY_RUN_ITEM, "message": json.dumps({"id": "a", "title": "A", "url": "javascript:x()"})},
             {"code": codes.DRY_RUN_ITEM, "message": "not json"}, {"code": codes.DRY_RUN, "message": "counts"}]
    items, others = first_items(notes)
    assert items == [{"id": "a", "title": "A", "url": None}]
    assert [n["message"] for n in others] == ["not json", "counts"]
