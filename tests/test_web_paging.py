"""Lists that grow with the installation come in pages (issue 32 item 12): the home page's collection sets,
/exports and /status's harvest sources, 25 a page, each pager a nav with a label and rel=prev/next links;
a page number out of range or not a number shows a page of the list, never an error."""

from __future__ import annotations

import re

from swath.core.config import Config
from swath.store import Store, web_repo
from swath.store.models import Export, Source
from swath.store.web_models import CollectionSet, ExportRequest
from swath.web.paging import PER_PAGE
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.webkit import member, web_config

MORE = PER_PAGE + 5  # rows of each list: a full page and 5 on the second


def fill(store: Store, rows: int = MORE) -> None:
    """`rows` collection sets of group lib, a collection in each, an export asked for each collection."""
    with store.session() as s:
        group = web_repo.group_named(s, "lib")
        s.add_all(CollectionSet(id=f"set-{n:02d}", name=f"Set {n:02d}", group_id=group.id) for n in range(rows))
        s.add_all(Source(id=f"src{n:02d}", name=f"Collection {n:02d}", harvest_type="oai_pmh", platform="oai_pmh",
                         seeds=[{"id": "s", "token": "https://oai.example.org/oai"}], options={}, credentials={},
                         collection_set_id=f"set-{n:02d}", collection_id=f"c{n:02d}", validation="accepted")
                  for n in range(rows))
        s.add_all(Export(id=f"exp{n:02d}", export_type="oai_pmh", format="csv", status="completed success",
                         collection_id=f"c{n:02d}") for n in range(rows))
        s.flush()
        s.add_all(ExportRequest(export_id=f"exp{n:02d}", collection_set_id=f"set-{n:02d}", source_id=f"src{n:02d}",
                                user_name="ada") for n in range(rows))


def pager(html: str, label: str) -> str:
    found = re.search(rf'<nav class="buttons pager" aria-label="{label}">(.*?)</nav>', html, re.S)
    assert found, f"no pager {label!r}"
    return found.group(1)


def test_home_exports_and_status_list_a_page_at_a_time(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    fill(store)
    cases = [("/", "page", "Pages of collection sets", re.compile(r'<a href="/sets/(set-\d+)">')),
             ("/exports", "page", "Pages of exports", re.compile(r'<a href="/exports/(exp\d+)">')),
             ("/status", "sources", "Pages of harvest sources", re.compile(r"<tr><td>(Collection \d+)</td>"))]
    for url, param, label, row in cases:
        first, second = c.get(url), c.get(f"{url}?{param}=2")
        assert first.status_code == second.status_code == 200, url
        shown = row.findall(first.text) + row.findall(second.text)
        assert len(row.findall(first.text)) == PER_PAGE and len(set(shown)) == MORE, url  # each row once
        assert re.search(rf'href="{re.escape(url)}\?{param}=2(#\w+)?" rel="next"', pager(first.text, label))
        assert re.search(rf'href="{re.escape(url)}\?{param}=1(#\w+)?" rel="prev"', pager(second.text, label))
        assert 'rel="prev"' not in first.text and 'rel="next"' not in second.text
        assert f"1–{PER_PAGE} of {MORE}" in pager(first.text, label)
        for odd in ("0", "99", "x", "9" * 40):  # within the list, or the first page
            assert c.get(f"{url}?{param}={odd}").status_code == 200, (url, odd)
    live = c.get("/status/live.json?sources=2")  # the live part keeps its page; its links go to the page itself
    assert 'href="/status?sources=1#sources" rel="prev"' in live.json()["parts"]["sources"]
    store.close()


def test_the_pager_is_a_labelled_navigation_a_browser_follows(config: Config, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    member(config, store)
    fill(store)
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        page.goto(base + "/")
        nav = page.get_by_role("navigation", name="Pages of collection sets")
        nav.get_by_role("link", name=f"Next {PER_PAGE}").click()
        page.wait_for_url(base + "/?page=2")
        assert page.get_by_role("link", name=f"Set {MORE - 1:02d}").count() == 1
        assert page.get_by_role("link", name="Set 00").count() == 0
    store.close()
