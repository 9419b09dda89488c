"""A 3,000-seed collection stays a page of a reasonable size: its seeds are listed 100 a page, and an export of
some of them takes their uids in a text box instead of 3,000 check boxes."""

from __future__ import annotations

from swath.core.config import Config
from swath.exporters.registry import start_routing_key
from swath.store import Store, repo
from swath.web.routes_collections import SEEDS_PER_PAGE
from tests.test_web import make_set
from tests.webkit import member, post, web_config

SEEDS = 3000
PAGE_LIMIT = 200_000  # bytes of HTML (issue #32: the page was 1.2 MB)


def test_a_3000_seed_collection_page_is_paged_and_exports_seeds_by_uid(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "People")
    uids = [f"{n:05d}@N0{n % 9 + 1}" for n in range(SEEDS)]  # fixed width: none is a part of another
    response = post(c, f"/sets/{set_id}/new", {"type": "flickr_user", "name": "Many people", "cred.key": "k",
                                               "cred.secret": "s", "seed_uids": "\n".join(uids)},
                    page=f"/sets/{set_id}")
    assert response.status_code == 303, response.text[:500]
    collection = response.headers["location"]
    first = c.get(collection)
    assert len(first.content) < PAGE_LIMIT, len(first.content)
    assert uids[SEEDS_PER_PAGE - 1] in first.text and uids[SEEDS_PER_PAGE] not in first.text
    assert f"Seeds 1–{SEEDS_PER_PAGE} of {SEEDS}" in first.text
    second = c.get(f"{collection}?seeds=2")
    assert uids[SEEDS_PER_PAGE] in second.text and uids[0] not in second.text
    last = c.get(f"{collection}?seeds=999").text  # past the end: the last page
    assert uids[-1] in last

    queue = broker.queue(config.queue_prefix + "exports", [start_routing_key("flickr_user")])
    chosen = [uids[5], uids[2500]]
    response = post(c, f"{collection}/export", {"type": "flickr_user", "format": "csv",
                                                "seed_uid": "\n".join(chosen)}, page=collection)
    assert response.status_code == 303, response.text[:500]
    _method, _headers, body = broker.get(queue)
    with store.session() as s:
        ids = {seed["uid"]: seed["id"] for seed in repo.find_source(s, collection.rsplit("/", 1)[1]).seeds}
    assert body["seeds"] == [{"id": ids[uid], "uid": uid} for uid in chosen]
    refused = post(c, f"{collection}/export", {"type": "flickr_user", "format": "csv", "seed_uid": "nobody"},
                   page=collection)
    assert refused.status_code == 400 and "Seed uids: no seed of this collection has the uid" in refused.text
    store.close()
