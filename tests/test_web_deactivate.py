"""Deactivating asks first, naming the consequence, and can be undone (Chromium): a collection and a set are
deactivated only after a confirmation page says what happens, and are reactivated from their pages; a
collection's schedule resumes."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store, repo
from swath.store.web_models import CollectionSet
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.test_web import make_oai, make_set
from tests.webkit import member, post, web_config


def test_deactivate_asks_naming_the_consequence_and_reactivate_undoes_it(config: Config,
                                                                        chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Papers")
    collection = make_oai(c, set_id, name="Theses")
    assert post(c, f"{collection}/schedule", {"kind": "every", "expr": "6", "unit": "h"}, page=collection
                ).status_code == 303
    source_id = collection.rsplit("/", 1)[1]
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        page.goto(base + collection)
        page.get_by_role("button", name="Deactivate this collection…").click()
        assert "no scheduled or manual harvest starts" in page.locator("#consequence").inner_text()
        with store.session() as s:
            assert repo.find_source(s, source_id).deleted_at is None  # asked, not done
        page.get_by_role("link", name="Cancel: keep it as it is").click()
        page.wait_for_url(base + collection)
        page.get_by_role("button", name="Deactivate this collection…").click()
        page.get_by_role("button", name="Deactivate", exact=True).click()
        page.wait_for_url(base + collection)
        assert "is deactivated" in page.locator(".notice").inner_text()
        with store.session() as s:
            gone = repo.find_source(s, source_id, deleted=True)
            assert gone.deleted_at is not None and gone.next_due is None
        page.get_by_role("button", name="Reactivate this collection").click()
        page.wait_for_url(base + collection)
        with store.session() as s:
            back = repo.find_source(s, source_id)
            assert back.deleted_at is None and back.next_due is not None  # its schedule runs again

        page.goto(f"{base}/sets/{set_id}")
        page.get_by_role("button", name="Deactivate this set…").click()
        assert "No new collection can be made" in page.locator("#consequence").inner_text()
        page.get_by_role("button", name="Deactivate", exact=True).click()
        page.wait_for_url(f"{base}/sets/{set_id}")
        with store.session() as s:
            assert s.get(CollectionSet, set_id).deactivated_at is not None
        page.get_by_role("button", name="Reactivate this set").click()
        page.wait_for_url(f"{base}/sets/{set_id}")
        with store.session() as s:
            assert s.get(CollectionSet, set_id).deactivated_at is None
    store.close()
