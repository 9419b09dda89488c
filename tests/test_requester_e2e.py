"""End to end on the real broker and store: create -> validate -> launch -> a real worker harvests ->
the monitor records the job and its WARCs -> `jobs` shows them -> export through a real exporter."""

from __future__ import annotations

import csv
import hashlib
from pathlib import Path

from swath.core.config import Config
from swath.demo import DEMO_API_KEY, DEMO_BLOG, ReplayServer
from swath.messages.worker import Worker, wait_for
from swath.monitor import monitor_worker
from swath.store import Store, repo
from tests.requesterkit import running, spec_named, swath


def test_source_to_export_through_workers_and_monitor(config: Config, broker) -> None:
    store = Store(url=config.db_url)
    with ReplayServer() as replay:
        harvester = Worker(config=config.with_api_url("tumblr", replay.url),
                           spec=spec_named("tumblr_harvester"))
        exporter = Worker(config=config, spec=spec_named("tumblr_exporter"))
        with running(monitor_worker(config=config, store=store)), running(harvester), running(exporter):
            src = swath(config, "harvest", "create", "demo-blog", "--type", "tumblr_blog_posts", "--seed-uid",
                        DEMO_BLOG, "--credential", "api_key=env:DEMO_TUMBLR_KEY", "--json")
            swath(config, "harvest", "validate", "demo-blog", "--comment", "checked by the test")
            job = swath(config, "harvest", "launch", "demo-blog", "--json", env={"DEMO_TUMBLR_KEY": DEMO_API_KEY})

            def job_done() -> bool:
                with store.session() as s:
                    return repo.get_job(s, job["id"]).status.startswith("completed")

            assert wait_for(job_done, 180), "the harvest job never completed in the store"
            (listed,) = swath(config, "harvest", "jobs", "demo-blog", "--json")
            human = swath(config, "harvest", "jobs").output
            assert listed["status"] == "completed success", listed["errors"]
            assert listed["totals"]["posts"] == len(replay.posts)
            files = listed["warcs"]["files"]
            assert files and listed["warcs"]["count"] == len(files)
            for warc in files:
                data = Path(warc["path"]).read_bytes()
                assert (len(data), hashlib.sha1(data).hexdigest()) == (warc["bytes"], warc["sha1"])
                assert Path(warc["path"]).is_relative_to(config.data_root.resolve() / "collections" / "default"
                                                         / src["id"])
                assert warc["path"] in human
            assert f"{len(replay.posts)} posts" in human

            export = swath(config, "export", "start", "tumblr_blog_posts", "--source", "demo-blog", "--dedupe",
                           "--json")

            def export_done() -> bool:
                with store.session() as s:
                    return repo.get_export(s, export["id"]).status.startswith("completed")

            assert wait_for(export_done, 180), "the export never completed in the store"
            status = swath(config, "export", "status", export["id"], "--json")
            assert status["status"] == "completed success", status["errors"]
            assert [e["id"] for e in swath(config, "export", "list", "--json")] == [export["id"]]
    out_dir = config.data_root / export["path"]
    rows = [row for f in sorted(out_dir.glob("*.csv")) for row in csv.DictReader(f.open(encoding="utf-8"))]
    assert sorted(r["tumblr_id"] for r in rows) == sorted(str(p["id"]) for p in replay.posts)
    store.close()
