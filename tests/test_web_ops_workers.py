"""The Operations page's workers: harvesters and exporters by their last report with its age; a worker
restarted on the same host (a new instance) replaces the one before it instead of both staying "seen"."""

from __future__ import annotations

import datetime as dt
import re

from swath.core.config import Config
from swath.store import Store
from swath.store.models import Export, Job, utcnow
from tests.webkit import client, login, user, web_config


def test_workers_seen_list_exporters_and_drop_replaced_instances(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    now = utcnow()
    with store.session() as s:
        for n, (instance, age) in enumerate((("old-instance", 3600), ("new-instance", 60))):
            s.add(Job(id=f"j{n}", source_id=None, harvest_type="oai_pmh", routing_key="harvest.start.oai_pmh.oai_pmh",
                      trigger="manual", status="completed success", service="OAI-PMH Harvester", host="box1",
                      instance=instance, updated_at=now - dt.timedelta(seconds=age)))
        s.add(Export(id="e1", export_type="tumblr_blog_posts", format="csv", status="completed success",
                     service="Tumblr Exporter", updated_at=now - dt.timedelta(minutes=5)))
    user(store, "root", admin=True)
    c = client(config, store)
    login(c, "root")
    page = c.get("/ops").text
    seen = page[page.index("Workers seen"):page.index("Disk use per collection")]
    assert "new-instance" in seen and "old-instance" not in seen
    assert "Tumblr Exporter" in seen and re.search(r"5 min ago", seen)
    store.close()
