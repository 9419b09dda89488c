"""A collection's statistics are kept between loads (swath/store/stats_cache.py) and summed again when a run or
WARC of it changed: the numbers are always those collection_stats gives from the rows; a new harvest's items show
on the collection's JSON and page after its harvest.status and warc_created are recorded (through the monitor's
own store functions), on SQLite and PostgreSQL."""

from __future__ import annotations

from typing import Any

from swath.core.config import Config
from swath.messages.model import Seed, WarcCreated
from swath.monitor import record_warc_created
from swath.store import Store, monitor_repo, repo
from swath.store.models import RUNNING, SUCCESS, Source
from swath.store.stats import collection_stats
from swath.store.stats_cache import StatsCache
from tests.requesterkit import pg_url  # noqa: F401 (the fixture)
from tests.test_web import make_oai, make_set, web  # noqa: F401 (the fixture)
from tests.test_web_stats import setup_collection
from tests.webkit import web_config

DAY = "2026-11-30"


def fresh(store: Store, source_id: str) -> dict[str, Any]:
    """The numbers summed from the rows now, without the cache."""
    with store.session() as s:
        return collection_stats(s, s.get(Source, source_id)).as_dict()


def status(run: str, state: str, records: int) -> dict[str, Any]:
    body: dict[str, Any] = {"id": run, "status": state, "date_started": f"{DAY}T10:00:00+00:00", "infos": [],
                            "warnings": [], "errors": [], "stats": {DAY: {"records": records}},
                            "warcs": {"count": 1, "bytes": 4321}}
    if state != RUNNING:
        body["date_ended"] = f"{DAY}T10:05:00+00:00"
    return body


def check_a_new_harvest_shows(config: Config, store: Store) -> None:
    ann, _bob, source_id, seeds = setup_collection(config, store)
    url = f"/collections/{source_id}/stats.json"
    before = ann.get(url).json()
    assert {k: v for k, v in before.items() if k != "collection"} == fresh(store, source_id)
    kept = ann.app.state.web.stats  # type: ignore[attr-defined]
    with store.session() as s:
        src = s.get(Source, source_id)
        assert kept.get(s, src) is kept.get(s, src)  # unchanged: summed once, then kept
    steps = [("running status", lambda s, src: monitor_repo.record_harvest_status(
                 s, status("run-new", RUNNING, 11), routing_key="harvest.status.oai.oai_pmh")),
             ("warc_created", lambda s, src: record_warc_created(s, WarcCreated(
                 path="/data/run-new.warc.gz", sha1="2" * 40, bytes=4321, warc_id="w-run-new",
                 date_created=f"{DAY}T10:04:00+00:00", collection_set_id=src.collection_set_id,
                 collection_id=src.collection_id, harvest_id="run-new", harvest_type="oai_pmh",
                 seeds=[Seed(seeds[0])]), data_root=None)),
             ("final status", lambda s, src: monitor_repo.record_harvest_status(
                 s, status("run-new", SUCCESS, 13), routing_key="harvest.status.oai.oai_pmh"))]
    with store.session() as s:
        repo.add_job(s, job_id="run-new", source=s.get(Source, source_id), routing_key="harvest.start.oai.oai_pmh",
                     trigger="manual")
    seen = [before]
    for what, record in steps:
        with store.session() as s:
            record(s, s.get(Source, source_id))
        now = ann.get(url).json()
        assert {k: v for k, v in now.items() if k != "collection"} == fresh(store, source_id), what
        assert now != seen[-1], f"the {what} changed nothing shown"
        seen.append(now)
    last = seen[-1]
    assert last["items"]["records"] == before["items"]["records"] + 13
    assert {"day": DAY, "items": {"records": 13}} in last["per_day"]
    assert last["warcs"] == {"count": before["warcs"]["count"] + 1, "bytes": before["warcs"]["bytes"] + 4321}
    assert last["runs"][SUCCESS] == before["runs"][SUCCESS] + 1 and RUNNING not in last["runs"]
    seed = next(x for x in last["seeds"] if x["id"] == seeds[0])
    assert seed["last_success"]["run"] == "run-new" and seed["items"]["records"] >= 13
    page = ann.get(f"/collections/{source_id}").text  # the page shows the same numbers
    assert f'data-label="{DAY}"' in page and 'data-value="13"' in page


def test_a_new_harvest_shows_after_its_statuses_are_recorded(web) -> None:  # noqa: F811
    check_a_new_harvest_shows(*web)


def test_on_postgresql(config: Config, pg_url: str) -> None:  # noqa: F811
    from tests.requesterkit import empty_tables

    empty_tables(pg_url)
    store = Store(url=pg_url)
    try:
        check_a_new_harvest_shows(web_config(config, pg_url), store)
    finally:
        store.close()


def test_the_cache_holds_at_most_its_size(web) -> None:  # noqa: F811
    config, store = web
    ann, _bob, source_id, _seeds = setup_collection(config, store)
    other_id = make_oai(ann, make_set(ann, "Other research"), name="other").rsplit("/", 1)[1]
    kept = StatsCache(size=1)
    with store.session() as s:
        src, other = s.get(Source, source_id), s.get(Source, other_id)
        first = kept.get(s, src)
        assert kept.get(s, src) is first
        kept.get(s, other)  # the first goes: summed again, to the same numbers
        again = kept.get(s, src)
        assert again is not first and again.as_dict() == first.as_dict()
