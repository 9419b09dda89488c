"""The monitor on the real broker: records jobs, WARCs and exports once, refuses what does not validate."""

from __future__ import annotations

from swath.core.config import Config
from swath.messages.broker import DEAD_QUEUE, DEAD_REASON_CODE
from swath.messages.worker import wait_for
from swath.monitor import monitor_worker
from swath.store import Store, monitor_repo, repo
from swath.store.models import RUNNING, SUCCESS
from tests.requesterkit import running
from tests.test_store import status_body


def warc_created(n: int, harvest_id: str = "h1") -> dict:
    return {"warc": {"path": f"/data/collections/set/col/{n}.warc.gz", "sha1": f"{n:040x}", "bytes": 1000 + n,
                     "id": f"warc-{n}", "date_created": "2024-01-02T00:00:00+00:00"},
            "collection_set": {"id": "set"}, "collection": {"id": "col"},
            "harvest": {"id": harvest_id, "type": "generic_pages"}}


def test_monitor_records_each_message_once_and_dead_letters_bad_ones(config: Config, broker) -> None:
    store = Store(url=config.db_url)
    key = "harvest.status.generic.generic_pages"
    final = status_body("h1", SUCCESS, 21)
    good = [(key, status_body("h1", RUNNING, 4)), ("warc_created", warc_created(1)), ("warc_created", warc_created(2)),
            (key, final), (key, status_body("h1", RUNNING, 9)),  # a late running status after the final one
            ("warc_created", warc_created(1)), (key, final),  # redeliveries
            ("export.status.tumblr.tumblr_blog_posts",
             {"id": "e1", "status": SUCCESS, "date_started": "2024-01-02T00:00:00+00:00", "infos": [],
              "warnings": [], "errors": [], "service": "X", "host": "h", "instance": "1", "files": 2})]
    invalid = {k: v for k, v in status_body("h2", SUCCESS, 1).items() if k != "status"}
    for routing_key, body in good[:3]:
        broker.publish(routing_key, body)  # waiting in the durable status queue before the monitor runs
    with running(monitor_worker(config=config, store=store)) as worker:
        for routing_key, body in good[3:]:
            broker.publish(routing_key, body)
        broker.publish(key, invalid)
        broker.publish(key, b"not json {")
        assert wait_for(lambda: worker.processed >= len(good) + 2, 120), f"the monitor processed {worker.processed}"
    with store.session() as s:
        jobs = repo.list_jobs(s)
        assert [(j.id, j.status, j.stats) for j in jobs] == [("h1", SUCCESS, final["stats"])]
        assert sorted(w.id for w in repo.warcs_for_collection(s, "col")) == ["warc-1", "warc-2"]
        export = repo.get_export(s, "e1")
        assert (export.status, export.extra) == (SUCCESS, {"files": 2})
        total, rejected = monitor_repo.rejected(s)
        assert total == 1 and rejected[0].code == "schema_invalid"  # the non-JSON body never reaches the job
    dead: list[tuple[str, str]] = []
    while len(dead) < 2:
        method, headers, body = broker.get(config.dead_letter_queue)
        dead.append((headers[DEAD_REASON_CODE], headers[DEAD_QUEUE]))
    assert sorted(dead) == [("not_json", config.status_queue), ("schema_invalid", config.status_queue)]
    assert broker.depth(config.status_queue) == 0
    store.close()
