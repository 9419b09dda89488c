"""Through the real RabbitMQ: harvests announce their WARCs, the monitor keeps the index, and an export of one
seed reads that seed's WARCs only. The proof: every other WARC is overwritten with a copy of the seed's
WARC, so reading any of them would export the seed's posts twice, which the listing of the data root does."""

from __future__ import annotations

import csv
import datetime as dt
import shutil
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator

from swath.core.config import Config
from swath.core.jobs import JobContext
from swath.exporters.base import run_export
from swath.exporters.warc_index import ScanIndex
from swath.messages import codes
from swath.messages.broker import Publisher
from swath.messages.model import parse_datetime
from swath.messages.worker import wait_for
from swath.monitor import monitor_worker
from swath.store import Store
from swath.store.models import Warc, WarcSeed
from tests.brokerprobe import running_worker, until_final
from tests.fakes.tumblr import API_KEY, FakeTumblr, build_blogs
from tests.requesterkit import running
from tests.test_export import expected_items

BLOGS = {"alpha.tumblr.com": 23, "beta.tumblr.com": 17, "gamma.tumblr.com": 9}
EXPORT_KEY = "export.start.tumblr.tumblr_blog_posts"


def harvest(name: str, collection: str) -> dict[str, Any]:
    return {"id": f"h-{name}", "type": "tumblr_blog_posts", "path": f"collections/set1/{collection}",
            "seeds": [{"id": f"seed-{name}", "uid": name}], "credentials": {"api_key": API_KEY},
            "collection_set": {"id": "set1"}, "collection": {"id": collection}}


def warc_dates(path: Path) -> tuple[dt.datetime, dt.datetime]:
    """The earliest and latest WARC-Date of a WARC's records, read with warcio."""
    with path.open("rb") as fh:
        dates = [parse_datetime(r.rec_headers.get_header("WARC-Date")) for r in ArchiveIterator(fh)]
    return min(dates), max(dates)


def csv_ids(folder: Path) -> list[str]:
    ids = []
    for path in sorted(folder.glob("*.csv")):
        with path.open(newline="", encoding="utf-8") as fh:
            ids.extend(row["tumblr_id"] for row in csv.DictReader(fh))
    return sorted(ids)


def test_a_seed_export_through_rabbitmq_reads_only_the_warcs_the_monitor_indexed_for_it(config: Config, broker) -> None:
    probe = broker.queue(f"{config.queue_prefix}probe", ["harvest.status.#", "export.status.#", "warc_created"])
    store = Store(url=config.db_url)
    announced: dict[str, list[dict[str, Any]]] = {}
    with FakeTumblr(blogs=build_blogs(counts=BLOGS)) as fake, running(monitor_worker(config=config, store=store)):
        harvest_config = config.with_api_url("tumblr", fake.url)
        with running_worker(harvest_config, "tumblr_harvester"), Publisher(config=config) as requester:
            for name, collection in (("alpha", "coll1"), ("beta", "coll1"), ("gamma", "coll2")):
                requester.publish("harvest.start.tumblr.tumblr_blog_posts", harvest(name, collection)).result(120)
                messages = until_final(broker, probe)
                assert messages[-1][1]["status"] == "completed success", messages[-1]
                announced[name] = [body for key, body in messages if key == "warc_created"]
        posts = {host.split(".")[0]: fake.expected_posts(host) for host in BLOGS}
        total = sum(len(bodies) for bodies in announced.values())

        def indexed() -> int:
            with store.session() as s:
                return s.query(Warc).count()

        assert wait_for(lambda: indexed() == total, 120), f"the monitor indexed {indexed()} of {total} WARCs"

    for name, bodies in announced.items():  # swath's harvester names the seeds and the records' dates
        for body in bodies:
            assert body["seeds"] == [{"id": f"seed-{name}", "uid": name}]
            assert (parse_datetime(body["warc"]["date_first"]), parse_datetime(body["warc"]["date_last"])) == \
                warc_dates(Path(body["warc"]["path"]))
    with store.session() as s:
        assert sorted((w.seed_id, w.uid) for w in s.query(WarcSeed)) == sorted(
            (f"seed-{name}", name) for name, bodies in announced.items() for _ in bodies)
    alpha = [Path(b["warc"]["path"]) for b in announced["alpha"]]
    others = [Path(b["warc"]["path"]) for name in ("beta", "gamma") for b in announced[name]]
    for n, path in enumerate(others):  # each now holds alpha's posts
        shutil.copyfile(alpha[n % len(alpha)], path)
    alpha_ids = sorted(p["id_string"] for p in posts["alpha"])
    assert sorted(i["id_string"] for i in expected_items(alpha, "tumblr_post")) == alpha_ids

    export = {"id": "e-alpha", "type": "tumblr_blog_posts", "seeds": [{"id": "seed-alpha", "uid": "alpha"}],
              "path": "exports/alpha", "format": "csv"}
    with running_worker(config, "tumblr_exporter"), Publisher(config=config) as requester:
        requester.publish(EXPORT_KEY, export).result(120)
        statuses = until_final(broker, probe)
    final = statuses[-1][1]
    assert final["status"] == "completed success", final
    assert [n["code"] for n in final["infos"] if n["code"].startswith("warc_")] == []  # the index answered
    assert final["warnings"] == []
    assert csv_ids(config.data_root / "exports" / "alpha") == alpha_ids  # no copy from the other WARCs

    # the control: listing the data root reads the overwritten WARCs too, and exports alpha's posts again
    listed: list[dict[str, Any]] = []
    ctx = JobContext(config=config, publish=lambda key, body: listed.append(body), service="test")
    run_export({**export, "id": "e-listed", "path": "exports/listed"}, routing_key=EXPORT_KEY, ctx=ctx,
               index=ScanIndex(data_root=config.data_root), workers=1)
    assert listed[-1]["status"] == "completed success"
    assert codes.WARC_INDEX_SCAN in [n["code"] for n in listed[-1]["infos"]]
    every = sorted(i["id_string"] for i in expected_items(alpha + others, "tumblr_post"))
    assert csv_ids(config.data_root / "exports" / "listed") == every and len(every) > len(alpha_ids)
    store.close()
