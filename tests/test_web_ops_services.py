"""The Operations page's processes and disk: workers and exporters are listed by the last status the monitor
recorded from each (its heartbeat) with its age; a worker replaced by a new instance of the same service and host
is shown as replaced, then drops out once REPLACED_AFTER has passed since its last status (and its row is
forgotten at the next status of its successor); the data root's free space is shown, flagged below
SWATH_MIN_FREE_BYTES. (`broker`: the page also reads the queues from the real RabbitMQ.)"""

from __future__ import annotations

import dataclasses
import re

from sqlalchemy import update

from swath.core.config import Config
from swath.core.storage import free_bytes
from swath.monitor import record
from swath.store import Store
from swath.store.models import RUNNING, SUCCESS, utcnow
from swath.store.notify_models import ServiceReport
from swath.store.notify_repo import REPLACED_AFTER
from tests.test_store import status_body
from tests.webkit import client, login, user, web_config

ROW = re.compile(r'<tr class="service-row">(.*?)</tr>')
CELL = re.compile(r"<td>(.*?)</td>")
TAG = re.compile(r"<[^>]+>")
PAGES_KEY, EXPORT_KEY = "harvest.status.generic.generic_pages", "export.status.tumblr.tumblr_blog_posts"


def harvester(job_id: str, instance: str, status: str = RUNNING) -> dict:
    return status_body(job_id, status, 1, service="Generic Harvester", host="worker-1", instance=instance)


def exporter(export_id: str, instance: str) -> dict:
    return {"id": export_id, "status": SUCCESS, "date_started": "2024-01-02T00:00:00+00:00", "infos": [],
            "warnings": [], "errors": [], "service": "Tumblr Exporter", "host": "exporter-1", "instance": instance}


def rows(c) -> list[tuple[str, ...]]:
    """Service, role, host and instance (with its note) of each listed process, as text."""
    page = c.get("/ops").text
    return [tuple(TAG.sub("", cell).strip() for cell in CELL.findall(row)[:4]) for row in ROW.findall(page)]


def test_workers_and_exporters_by_last_status_and_a_replaced_worker_drops_out(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    assert "No worker or exporter has reported yet." in c.get("/ops").text

    record(store, PAGES_KEY, harvester("h1", "101"))
    record(store, EXPORT_KEY, exporter("e1", "7"))
    assert sorted(rows(c)) == [("Generic Harvester", "harvester", "worker-1", "101"),
                               ("Tumblr Exporter", "exporter", "exporter-1", "7")]
    assert "h1" in c.get("/ops").text and "e1" in c.get("/ops").text  # what each last reported on

    record(store, PAGES_KEY, harvester("h2", "202"))  # the worker restarted: same service and host, new instance
    listed = rows(c)
    assert ("Generic Harvester", "harvester", "worker-1", "202") in listed
    assert ("Generic Harvester", "harvester", "worker-1", "101 (replaced by 202)") in listed

    with store.session() as s:  # the old instance's last status is now older than the bound
        s.execute(update(ServiceReport).where(ServiceReport.instance == "101")
                  .values(last_seen=utcnow() - REPLACED_AFTER - REPLACED_AFTER / 10))
    assert [r[3] for r in rows(c) if r[0] == "Generic Harvester"] == ["202"]
    record(store, PAGES_KEY, harvester("h2", "202", SUCCESS))
    with store.session() as s:
        assert sorted(r.instance for r in s.query(ServiceReport)) == ["202", "7"]  # the replaced row forgotten
    store.close()


def test_free_space_of_the_data_root_is_shown_and_flagged_below_the_minimum(config: Config, broker) -> None:
    free = free_bytes(config.data_root)
    assert free is not None
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib",))
    for minimum, flagged in ((0, False), (free * 2, True)):  # 0 turns the guard off
        c = client(web_config(dataclasses.replace(config, min_free_bytes=minimum)), store)
        login(c, "ada")
        page = c.get("/ops").text
        assert f"{config.data_root}: " in page and " free" in page
        assert ("SWATH_MIN_FREE_BYTES</code> asks for" in page) is flagged
    store.close()


def test_the_operations_pages_live_parts_are_for_admins_and_show_a_new_worker(config: Config, broker) -> None:
    """/ops/live.json (what live.js fetches on the Operations page): admins only, as the page; a status the
    monitor recorded since shows in the services part; fetching it leaves the page's message to the page."""
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", admin=True, groups=("lib",))
    user(store, "bob", groups=("lib",))
    admin, member = client(config, store), client(config, store)
    login(admin, "ada"), login(member, "bob")
    assert member.get("/ops/live.json").status_code == 404  # as /ops
    anonymous = client(config, store).get("/ops/live.json")
    assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login?next=/ops/live.json"
    parts = admin.get("/ops/live.json").json()["parts"]
    assert set(parts) == {"queues", "services", "disk", "letters", "rejected"}
    assert "No worker or exporter has reported yet." in parts["services"]
    record(store, PAGES_KEY, harvester("h1", "101"))
    parts = admin.get("/ops/live.json").json()["parts"]
    assert "Generic Harvester" in parts["services"] and "worker-1" in parts["services"]
    page = admin.get("/ops").text
    assert all(html in page for name, html in parts.items() if name != "services")  # the page's own parts
    store.close()
