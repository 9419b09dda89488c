"""An export of chosen seeds, requested over HTTP: the collection page offers its seeds with uids, the
export.start on the real broker names the ticked ones as `swath export start --seed-uid` would (no collection),
and the real exporter job, run on that message, writes only those seeds' items."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.exporters.base import run_export
from swath.exporters.registry import start_routing_key
from swath.store import Store, repo
from tests.test_export import SFM, expected_items
from tests.test_web import make_set
from tests.webkit import client, login, post, user, web_config


def test_an_export_of_chosen_seeds_holds_only_their_items(config: Config, broker, fixtures_dir: Path) -> None:
    config = web_config(dataclasses.replace(config, status_interval=0.0))
    store = Store(url=config.db_url)
    user(store, "ada", groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    set_id = make_set(c, "Photos")
    warcs = fixtures_dir / SFM / "flickr" / "1"
    photos = expected_items(sorted(warcs.rglob("*.warc.gz"), key=str), "flickr_photo")
    owners = sorted({p["owner"]["nsid"] for p in photos})
    assert len(owners) > 1
    response = post(c, f"/sets/{set_id}/new", {"type": "flickr_user", "name": "Flickr people", "cred.key": "k",
                                               "cred.secret": "s", "seed_uids": "\n".join(owners)},
                    page=f"/sets/{set_id}")
    assert response.status_code == 303, response.text
    collection = response.headers["location"]
    with store.session() as s:
        src = repo.find_source(s, collection.rsplit("/", 1)[1])
        seeds, folder = src.seeds, config.data_root / "collections" / src.collection_set_id / src.collection_id
    shutil.copytree(warcs, folder)  # the collection's harvests, as SFM left them
    page = c.get(collection).text
    assert all(f'name="seed" value="{s["id"]}"' in page for s in seeds)
    chosen = next(s for s in seeds if s["uid"] == owners[0])

    queue = broker.queue(config.queue_prefix + "exports", [start_routing_key("flickr_user")])
    response = post(c, f"{collection}/export", {"type": "flickr_user", "format": "dehydrate", "seed": chosen["id"]},
                    page=collection)
    assert response.status_code == 303, response.text
    method, _headers, body = broker.get(queue)
    assert body["seeds"] == [{"id": chosen["id"], "uid": owners[0]}] and "collection" not in body
    assert response.headers["location"] == f"/exports/{body['id']}"
    assert f"of seeds {owners[0]}" in c.get(collection).text  # the change history says which

    published: list[dict] = []
    run_export(body, routing_key=method.routing_key, ctx=JobContext(
        config=config, service="Test Exporter", publish=lambda _key, status: published.append(status)))
    assert published[-1]["status"] == "completed success", published[-1]
    (written,) = (config.data_root / body["path"]).glob("*.txt")
    assert written.read_text().split() == [p["id"] for p in photos if p["owner"]["nsid"] == owners[0]]

    refused = post(c, f"{collection}/export", {"type": "flickr_user", "format": "csv", "seed": "nonesuch"},
                   page=collection)
    assert refused.status_code == 400 and "no seed with a uid" in refused.text
    store.close()
