"""A form sent after its session ended is not lost (issue 32 item 8): the user logs in again and finds the form
they were on filled in with what they typed; passwords, credential values and the CSRF token are not kept, and
a post from another site keeps nothing (it is answered unread, as before)."""

from __future__ import annotations

from playwright.sync_api import expect

from swath.core.config import Config
from swath.store import Store, repo
from swath.web.kept_forms import MAX_CHARS
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.test_web import make_set
from tests.webkit import PASSWORD, csrf_of, login, member, web_config

TYPED = {"#name": "Thèses de 2026 — dépôt", "#seeds": "https://oai.example.org/oai\nhttps://oai2.example.org/oai",
         "#collection_id": "theses-2026"}


def test_the_form_comes_back_filled_in_after_logging_in_again(config: Config, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    set_id = make_set(member(config, store), "Papers")
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        form_url = f"{base}/sets/{set_id}/new?type=oai_pmh"
        page.goto(form_url)
        for selector, value in TYPED.items():
            page.locator(selector).fill(value)
        page.locator("#opt-metadataPrefix").fill("mods")
        page.context.clear_cookies(name="swath_session")  # the session ends while the user types
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url(lambda url: url.startswith(f"{base}/login?next="))
        expect(page.locator(".notice")).to_contain_text("session has ended")
        page.get_by_label("User name").fill("ada")
        page.get_by_label("Password").fill(PASSWORD)
        page.get_by_role("button", name="Log in").click()
        page.wait_for_url(lambda url: url == form_url)
        for selector, value in TYPED.items():
            expect(page.locator(selector)).to_have_value(value)
        expect(page.locator("#opt-metadataPrefix")).to_have_value("mods")
        with store.session() as s:
            assert [src.name for src in repo.list_sources(s)] == []  # the post that found no session made nothing
        page.get_by_role("button", name="Create collection").click()  # sent again, with this session's token
        page.wait_for_url(f"{base}/collections/*")
        page.goto(form_url)  # the kept form was given once: the form is empty again
        expect(page.locator("#name")).to_have_value("")
    with store.session() as s:
        src = repo.list_sources(s)[0]
    assert (src.name, [seed["token"] for seed in src.seeds]) == (TYPED["#name"], TYPED["#seeds"].splitlines())
    assert src.options.get("metadataPrefix") == "mods"
    store.close()


def test_secrets_are_not_kept_and_another_site_cannot_plant_a_form(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Papers")
    page = f"/sets/{set_id}/new?type=oai_pmh"
    csrf = csrf_of(c.get(page).text)
    c.cookies.delete("swath_session")
    sent = {"csrf": csrf, "name": "Kept name", "seeds": "https://oai.example.org/oai", "cred.password": "s3cret-value"}
    elsewhere = c.post(f"/sets/{set_id}/new", data=sent, headers={"Origin": "https://evil.example",
                                                                   "Referer": f"https://evil.example{page}"})
    assert elsewhere.status_code == 403 and "swath_form" not in elsewhere.headers.get("set-cookie", "")
    secret_form = c.post("/account/password", data={"csrf": csrf, "old": "a", "new": "b", "again": "b"},
                         headers={"Origin": "http://testserver", "Referer": "http://testserver/account"})
    assert secret_form.status_code == 403 and "swath_form" not in secret_form.headers.get("set-cookie", "")
    ours = {"Origin": "http://testserver", "Referer": f"http://testserver{page}"}
    too_big = c.post(f"/sets/{set_id}/new", data={**sent, "seeds": "x" * (MAX_CHARS + 1)}, headers=ours)
    assert too_big.status_code == 303 and "swath_form" not in too_big.headers.get("set-cookie", "")
    here = c.post(f"/sets/{set_id}/new", data=sent, headers=ours)
    assert here.status_code == 303 and here.headers["location"].startswith("/login?next=")
    assert "swath_form" in here.headers["set-cookie"]
    login(c, "ada")
    html = c.get(page).text
    assert "Kept name" in html and 'id="kept-form"' in html
    assert "s3cret-value" not in html and csrf not in html.split('id="kept-form"', 1)[1].split("</script>", 1)[0]
    assert 'id="kept-form"' not in c.get(page).text  # given once
    store.close()
