"""Statistics of a collection and of its seeds in the web app (issue 32 item 6): totals over the collection's life
from its runs' harvest.status stats, items per day, WARC bytes from the WARC index, last success and failure per
seed; as JSON, and as an SVG chart with its table on the collection page in Chromium; another group's user gets
the 404 the HTML pages give. The runs are recorded through the monitor's own store functions."""

from __future__ import annotations

import contextlib
import re
from collections import Counter
from typing import Any

import pytest

from swath.core.config import Config
from swath.messages.model import Seed, WarcCreated
from swath.monitor import record_warc_created
from swath.store import Store, monitor_repo, repo
from swath.store.models import FAILURE, SUCCESS, Source
from swath.web.app import create_app
from tests.requesterkit import pg_url  # noqa: F401 (the fixture)
from tests.test_web import make_oai, make_set, web  # noqa: F401 (the fixture)
from tests.test_web_e2e import CHROMIUM, serving, shot
from tests.webkit import PASSWORD, client, login, user, web_config

SEEDS = "https://a.example.org/oai\nhttps://b.example.org/oai"
# (run, seeds its WARC holds by index into the collection's seeds, status, error seed, stats, WARC bytes, ended)
RUNS: list[tuple[str, list[int], str, int | None, dict[str, dict[str, int]], int, str]] = [
    ("run-a", [0], SUCCESS, None, {"2026-11-20": {"records": 5, "deleted records": 1}, "2026-11-21": {"records": 3}},
     1000, "2026-11-21T10:00:00+00:00"),
    ("run-ab", [0, 1], FAILURE, 1, {"2026-11-21": {"records": 4}}, 2500, "2026-11-22T10:00:00+00:00"),
    ("run-b", [1], SUCCESS, None, {"2026-11-22": {"records": 7}}, 700, "2026-11-23T10:00:00+00:00"),
]


def record_runs(store: Store, source_id: str) -> list[str]:
    """RUNS as the monitor records them (harvest.status, warc_created); the collection's seed ids."""
    with store.session() as s:
        src = s.get(Source, source_id)
        seeds = [seed["id"] for seed in src.seeds]
        for run, held, status, error_seed, stats, size, ended in RUNS:
            repo.add_job(s, job_id=run, source=src, routing_key="harvest.start.oai.oai_pmh", trigger="manual")
            errors = [{"code": "http_error", "message": f"{run} failed", "seed_id": seeds[error_seed]}] \
                if error_seed is not None else []
            body = {"id": run, "status": status, "date_started": ended, "date_ended": ended, "stats": stats,
                    "errors": errors, "infos": [], "warnings": [], "warcs": {"count": 1, "bytes": size}}
            monitor_repo.record_harvest_status(s, body, routing_key="harvest.status.oai.oai_pmh")
            record_warc_created(s, WarcCreated(
                path=f"/data/{run}.warc.gz", sha1="0" * 40, bytes=size, warc_id=f"w-{run}", date_created=ended,
                collection_set_id=src.collection_set_id, collection_id=src.collection_id, harvest_id=run,
                harvest_type="oai_pmh", seeds=[Seed(seeds[i]) for i in held]), data_root=None)
        # another collection's WARC in the index: not this collection's bytes
        record_warc_created(s, WarcCreated(path="/data/other.warc.gz", sha1="1" * 40, bytes=99999, warc_id="w-other",
                                           date_created="2026-11-22T00:00:00", collection_set_id="elsewhere",
                                           collection_id="other", harvest_id="other-run", harvest_type="oai_pmh"),
                            data_root=None)
    return seeds


def expected() -> tuple[Counter, dict[str, Counter]]:
    totals, days = Counter(), {}  # type: ignore[var-annotated]
    for _run, _held, _status, _error, stats, _size, _ended in RUNS:
        for day, counts in stats.items():
            totals.update(counts)
            days.setdefault(day, Counter()).update(counts)
    return totals, days


def seed_items(index: int) -> Counter:
    """A seed's items: those of the runs whose WARCs hold it alone."""
    out: Counter = Counter()
    for _run, held, _status, _error, stats, _size, _ended in RUNS:
        if held == [index]:
            for counts in stats.values():
                out.update(counts)
    return out


def setup_collection(config: Config, store: Store) -> tuple[Any, Any, str, list[str]]:
    user(store, "ann", groups=("alpha",))
    user(store, "bob", groups=("beta",))
    ann, bob = client(config, store), client(config, store)
    login(ann, "ann"), login(bob, "bob")
    collection = make_oai(ann, make_set(ann, "Alpha research"), seeds=SEEDS)
    source_id = collection.rsplit("/", 1)[1]
    return ann, bob, source_id, record_runs(store, source_id)


def test_collection_and_seed_statistics_as_json_for_the_group_only(web) -> None:
    check_json(*web)


def test_statistics_on_postgresql(config: Config, pg_url: str) -> None:
    from tests.requesterkit import empty_tables

    empty_tables(pg_url)
    store = Store(url=pg_url)
    try:
        check_json(web_config(config, pg_url), store)
    finally:
        store.close()


def check_json(config: Config, store: Store) -> None:
    ann, bob, source_id, seeds = setup_collection(config, store)
    totals, days = expected()
    body = ann.get(f"/collections/{source_id}/stats.json").json()
    assert body["items"] == dict(totals) and body["total_items"] == sum(totals.values())
    assert body["per_day"] == [{"day": d, "items": dict(days[d])} for d in sorted(days)]
    assert body["warcs"] == {"count": len(RUNS), "bytes": sum(r[5] for r in RUNS)}
    assert body["runs"] == dict(Counter(r[2] for r in RUNS))
    assert body["shared_runs"] == sum(1 for r in RUNS if len(r[1]) > 1)
    by_seed = {seed["id"]: seed for seed in body["seeds"]}
    for index, seed_id in enumerate(seeds):
        seed = ann.get(f"/collections/{source_id}/seeds/{seed_id}/stats.json").json()
        assert seed == {"collection": body["collection"], **by_seed[seed_id]}
        assert seed["items"] == dict(seed_items(index))
        held = [r for r in RUNS if index in r[1]]
        assert seed["warcs"] == {"count": len(held), "bytes": sum(r[5] for r in held)}
    a, b = by_seed[seeds[0]], by_seed[seeds[1]]
    # seed a: run-ab failed for b only, so a's last success is run-ab; b failed in run-ab, then succeeded in run-b
    assert a["last_success"]["run"] == "run-ab" and a["last_failure"] is None
    assert b["last_success"]["run"] == "run-b" and b["last_failure"] == {
        "run": "run-ab", "at": "2026-11-22T10:00:00+00:00", "message": "run-ab failed"}
    assert "<svg" in ann.get(f"/collections/{source_id}/seeds/{seeds[1]}").text
    assert ann.get(f"/collections/{source_id}/seeds/no-such-seed").status_code == 404
    # another group's user: the 404 of the collection page; no session: the login page, as for the HTML pages
    assert bob.get(f"/collections/{source_id}").status_code == 404
    for url in (f"/collections/{source_id}/stats.json", f"/collections/{source_id}/seeds/{seeds[0]}",
                f"/collections/{source_id}/seeds/{seeds[0]}/stats.json", "/runs/run-a.json"):
        assert bob.get(url).status_code == 404, url
        anonymous = client(config, store).get(url)
        assert anonymous.status_code == 303 and anonymous.headers["location"].startswith("/login"), url


def test_the_documented_run_json_answers(web) -> None:
    """`/runs/<id>.json` was matched by `/runs/{job_id}` first and answered 404."""
    config, store = web
    ann, _bob, _source_id, _seeds = setup_collection(config, store)
    response = ann.get("/runs/run-b.json")
    assert response.status_code == 200, response.text
    assert response.json()["id"] == "run-b" and response.json()["totals"] == {"records": 7}


@pytest.mark.skipif(not __import__("os").path.exists(CHROMIUM), reason="needs Debian's chromium")
def test_the_collection_page_draws_the_chart_and_its_table_in_chromium(web) -> None:
    from playwright.sync_api import sync_playwright

    config, store = web
    _ann, _bob, source_id, seeds = setup_collection(config, store)
    totals, days = expected()
    with contextlib.ExitStack() as stack:
        base = stack.enter_context(serving(create_app(config=config, store=Store(url=config.db_url))))
        play = stack.enter_context(sync_playwright())
        browser = play.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        stack.callback(browser.close)
        pages = {}
        for name in ("ann", "bob"):
            page = browser.new_context().new_page()
            page.goto(base + "/login")
            page.get_by_label("User name").fill(name)
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url(base + "/")
            pages[name] = page
        page = pages["ann"]
        page.goto(f"{base}/collections/{source_id}")
        chart = page.get_by_role("img", name=re.compile("Items per day in oai"))
        assert chart.is_visible()
        bars = chart.locator("rect.bar")
        assert [(b.get_attribute("data-label"), int(b.get_attribute("data-value") or -1)) for b in bars.all()] == \
            [(d, sum(days[d].values())) for d in sorted(days)]
        assert all(b.bounding_box()["height"] > 0 for b in bars.all())  # type: ignore[index]
        table = page.locator("table.stats-days")
        kinds = sorted(totals)
        assert table.locator("thead th").all_inner_texts() == ["Day", *kinds, "All items"]
        rows = [row.locator("th, td").all_inner_texts() for row in table.locator("tbody tr").all()]
        assert rows == [[d, *(str(days[d].get(k, 0)) for k in kinds), str(sum(days[d].values()))]
                        for d in sorted(days, reverse=True)]
        totals_table = page.locator("table.stats-totals")
        assert totals_table.locator("tr", has_text="All items").locator("td").inner_text() == str(sum(totals.values()))
        seed_rows = page.locator("table.stats-seeds tbody tr")
        assert seed_rows.count() == len(seeds)
        assert seed_rows.nth(0).locator("td").first.inner_text() == str(sum(seed_items(0).values()))
        shot(page, "collection-stats")
        seed_rows.nth(1).get_by_role("link").first.click()
        page.wait_for_url(f"**/seeds/{seeds[1]}")
        assert page.get_by_role("img", name=re.compile("Items per day of seed")).is_visible()
        shot(page, "seed-stats")
        for url in (f"/collections/{source_id}", f"/collections/{source_id}/seeds/{seeds[0]}",
                    f"/collections/{source_id}/stats.json"):
            assert pages["bob"].goto(base + url).status == 404, url  # type: ignore[union-attr]


def test_the_chart_escapes_its_labels_and_keeps_the_latest_days() -> None:
    from swath.web.charts import MAX_BARS, bar_chart

    points = [(f"day {n}", n) for n in range(MAX_BARS + 5)] + [('<script>alert("x")</script>', 3)]
    svg = str(bar_chart(points, ident="c", title="Items & more", unit="items"))
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "Items &amp; more" in svg
    labels = re.findall(r'data-label="([^"]*)"', svg)
    assert len(labels) == MAX_BARS and labels[0] == "day 6"  # the oldest dropped, the newest kept
    assert 'role="img"' in svg and 'aria-labelledby="c-title c-desc"' in svg
