"""Renaming a collection and a set (Chromium): the new name shows, the history records old → new, the folder
stays as it was (and the page says so); a name the group uses already is refused with what to do, another
group may use it; another group's member cannot rename (404)."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store
from swath.store.models import Source
from swath.store.web_models import Change, CollectionSet
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.test_web import make_oai, make_set
from tests.webkit import csrf_of, member, web_config


def rename(page, name: str) -> None:
    page.get_by_text("Rename", exact=True).click()
    page.get_by_label("New name").fill(name)
    page.get_by_role("button", name="Save the new name").click()


def test_collections_and_sets_are_renamed_in_the_history_and_keep_their_folders(config: Config,
                                                                               chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    ada = member(config, store, "ada", "lib")
    bob = member(config, store, "bob", "museum")
    set_id = make_set(ada, "Papers")
    theses = make_oai(ada, set_id, name="Theses")
    make_oai(ada, set_id, name="Journals")
    bob_set = make_set(bob, "Other")
    make_oai(bob, bob_set, name="Dépôt légal")  # another group's name: free for ada's group
    source_id = theses.rsplit("/", 1)[1]
    with store.session() as s:
        folder = s.get(Source, source_id).collection_id
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        page.goto(base + theses)
        assert f"collections/{set_id}/{folder}" in page.locator(".rename .hint").text_content()
        rename(page, "Journals")  # the group's other collection has it
        assert "has a collection named 'Journals' already" in page.locator("[role=alert], .error").first.inner_text()
        page.goto(base + theses)
        rename(page, "Dépôt légal")
        page.wait_for_url(base + theses)
        assert page.locator("h1").inner_text().startswith("Dépôt légal")
        assert f"the folder collections/{set_id}/{folder} stays as it is" in page.locator(".notice").inner_text()
        assert "Theses → Dépôt légal" in page.content()  # the history

        page.goto(f"{base}/sets/{set_id}")
        rename(page, "Archives été 2026")
        page.wait_for_url(f"{base}/sets/{set_id}")
        assert page.locator("h1").inner_text().startswith("Archives été 2026")
        assert "Papers → Archives été 2026" in page.content()
    with store.session() as s:
        src = s.get(Source, source_id)
        assert (src.name, src.collection_id, src.collection_set_id) == ("Dépôt légal", folder, set_id)
        assert s.get(CollectionSet, set_id).name == "Archives été 2026"
        assert {c.action for c in s.query(Change).filter(Change.collection_set_id == set_id)} >= {
            "renamed collection", "renamed set"}
    token = csrf_of(bob.get("/").text)
    assert bob.post(f"{theses}/rename", data={"csrf": token, "name": "mine"}).status_code == 404
    assert bob.post(f"/sets/{set_id}/rename", data={"csrf": token, "name": "mine"}).status_code == 404
    with store.session() as s:
        assert s.get(Source, source_id).name == "Dépôt légal"
    store.close()
