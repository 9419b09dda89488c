"""Stuck work (issue #18, 2): a launch nobody consumes says so, a queued job can be cancelled (also by `stop`),
and the `source_busy` advice names a command that works. Real broker and store."""

from __future__ import annotations

from swath.core.config import Config
from swath.core.stops import stop_recorded
from swath.store import Store, monitor_repo, repo
from swath.store.models import RUNNING
from tests.requesterkit import swath

KEY = {"TEST_KEY": "k"}


def create(config: Config, name: str) -> None:
    swath(config, "harvest", "create", name, "--type", "generic_pages", "--seed", "http://127.0.0.1:9/p",
          "--credential", "api_key=env:TEST_KEY")
    swath(config, "harvest", "validate", name)


def test_launch_without_consumer_warns_and_cancel_takes_the_start_back(config: Config, broker) -> None:
    swath(config, "broker", "setup")  # queues exist, no worker runs: the stuck case
    queue = config.queue_prefix + "generic_harvester"
    create(config, "pages")
    create(config, "other")
    create(config, "third")
    first = swath(config, "harvest", "launch", "pages", "--json", env=KEY)
    assert first["status"] == "queued" and first["queue"] == {"name": queue, "consumers": 0, "messages": 1}
    assert "swath worker generic_harvester" in first["warning"] and "swath harvest cancel pages" in first["warning"]
    human = swath(config, "harvest", "launch", "other", env=KEY).output
    assert "warning: no worker consumes queue" in human
    other = swath(config, "harvest", "jobs", "other", "--json")[0]
    third = swath(config, "harvest", "launch", "third", "--json", env=KEY)

    busy = swath(config, "harvest", "launch", "pages", "--json", env=KEY, expect=1)
    assert busy["error"]["code"] == "source_busy"
    assert "`swath harvest cancel pages`" in busy["error"]["message"]  # the advice, followed, works:
    cancelled = swath(config, "harvest", "cancel", "pages", "--json")
    assert cancelled["id"] == first["id"] and cancelled["status"] == "cancelled"
    assert "taken out of queue" in cancelled["cancelled"]
    again = swath(config, "harvest", "launch", "pages", "--json", env=KEY)  # the source is free again

    stopped = swath(config, "harvest", "stop", "third", "--json")  # a stop of a queued job cancels it
    assert stopped["id"] == third["id"] and stopped["status"] == "cancelled"
    waiting = [body["id"] for _key, body in broker.drain(queue)]
    assert waiting == [other["id"], again["id"]]  # both cancelled starts gone, the others in their order
    assert [j["status"] for j in swath(config, "harvest", "jobs", "pages", "--json")] == ["queued", "cancelled"]
    refused = swath(config, "harvest", "cancel", first["id"], "--json", expect=1)
    assert refused["error"]["code"] == "bad_request" and "cancelled" in refused["error"]["message"]


def test_a_running_job_whose_worker_is_gone_can_be_cancelled(config: Config, broker) -> None:
    swath(config, "broker", "setup")
    create(config, "pages")
    job = swath(config, "harvest", "launch", "pages", "--json", env=KEY)
    store = Store(url=config.db_url)
    try:
        with store.session() as s:  # the monitor recorded it running; then its worker died
            repo.get_job(s, job["id"]).status = RUNNING
        busy = swath(config, "harvest", "launch", "pages", "--json", env=KEY, expect=1)
        assert "`swath harvest stop pages`" in busy["error"]["message"]
        assert "`swath harvest cancel pages`" in busy["error"]["message"]
        stop = swath(config, "harvest", "stop", "pages", "--json", expect=1)
        assert stop["error"]["code"] == "no_worker" and f"swath harvest cancel {job['id']}" in stop["error"]["message"]
        cancelled = swath(config, "harvest", "cancel", job["id"], "--json")
        assert cancelled["status"] == "cancelled" and cancelled["stop_requested_at"]
        assert stop_recorded(config.data_root, job["id"])  # a worker taking the start later stops it at once
        # what its worker still reports is recorded, the job stays cancelled
        with store.session() as s:
            monitor_repo.record_harvest_status(s, {"id": job["id"], "status": "completed success",
                                           "stats": {"2024-01-01": {"items": 3}}, "date_ended": "2024-01-01T00:00:00Z"},
                                       routing_key=job["routing_key"])
        (listed,) = swath(config, "harvest", "jobs", "pages", "--json")
        assert listed["status"] == "cancelled" and listed["totals"] == {"items": 3}
        swath(config, "harvest", "launch", "pages", env=KEY)
    finally:
        store.close()


def test_export_start_without_consumer_warns_as_a_launch_does(config: Config, broker) -> None:
    swath(config, "broker", "setup")  # the exporter's queue exists, no exporter runs
    queue = config.queue_prefix + "ckan_exporter"
    first = swath(config, "export", "start", "ckan", "--collection", "c1", "--json")
    assert first["status"] == "queued" and first["queue"] == {"name": queue, "consumers": 0, "messages": 1}
    assert "swath worker ckan_exporter" in first["warning"]
    human = swath(config, "export", "start", "ckan", "--collection", "c1").output
    assert f"warning: no worker consumes queue {queue}" in human
    assert [body["id"] for _key, body in broker.drain(queue)][0] == first["id"]  # published all the same
