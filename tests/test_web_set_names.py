"""Names as archivists write them (Chromium): a set or collection name of any script and punctuation, up to
the documented length, gets a folder made by transliteration (Dépôt -> depot), free in its place; the folder
field's pattern works in the browser (valid under the `v` flag); a refusal names the field that was typed and
the form keeps what was typed."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store, repo
from swath.web.fields import NAME_MAX
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.webkit import user, web_config

LONG = ("Archives été 2026 : « Dépôt légal » des sites web de l'Île-de-France, n° 3 — collectés "
        "par l'équipe du dépôt, d'après la liste révisée (version définitive) ")
TOO_LONG = LONG * 2


def new_set(page, base: str, name: str, folder: str = "") -> None:
    page.goto(base + "/")
    page.locator("#set-name").fill(name)
    page.locator("#set-id").fill(folder)
    page.get_by_role("button", name="Create collection set").click()


def test_sets_take_any_name_with_transliterated_folders_and_refusals_name_their_field(
        config: Config, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", groups=("lib",))
    assert len(LONG) <= NAME_MAX < len(TOO_LONG)
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        new_set(page, base, "Dépôt")
        page.wait_for_url(base + "/sets/depot")
        new_set(page, base, "Dépôt!")  # another name, the same folder made from it: the next free one
        page.wait_for_url(base + "/sets/depot-2")
        new_set(page, base, LONG)
        page.wait_for_url(base + "/sets/archives-ete-2026-depot-legal-des-sites-web-de-l-ile-de-fran")  # 60 at most
        assert page.get_by_role("heading", name=LONG.strip()).is_visible()

        # the browser's own check of the folder field: on (the old pattern was an invalid `v`-flag regex)
        new_set(page, base, "Photos", folder="my folder!")
        assert page.locator("#set-id").evaluate("e => e.validity.patternMismatch") is True
        assert page.url == base + "/"

        # the server's refusals: the field's label first, what was typed kept
        new_set(page, base, "Photos", folder="depot")
        alert = page.locator("#set-error").inner_text()
        assert alert.startswith("Folder name:") and "depot" in alert
        assert page.locator("#set-name").input_value() == "Photos"
        new_set(page, base, "Dépôt")
        assert page.locator("#set-error").inner_text().startswith("Name:")
        page.locator("#set-name").evaluate("(e, v) => { e.removeAttribute('maxlength'); e.value = v }", TOO_LONG)
        page.get_by_role("button", name="Create collection set").click()
        assert page.locator("#set-error").inner_text().startswith(f"Name: at most {NAME_MAX} characters")
        assert page.locator("#set-name").input_value() == TOO_LONG.strip()

        # a collection's folder is made the same way
        page.goto(base + "/sets/depot")
        page.get_by_label("Harvest type").select_option("oai_pmh")
        page.get_by_role("button", name="Next: settings").click()
        page.get_by_label("Name", exact=True).fill("Dépôt légal — thèses")
        page.locator("#seeds").fill("https://oai.example.org/oai")
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
    with store.session() as s:
        (src,) = repo.list_sources(s)
        assert (src.collection_set_id, src.collection_id) == ("depot", "depot-legal-theses")
    store.close()
