"""Credentials as objects of a group (Chromium): added once, used by three collections, rotated in one place so
every collection's next real harvest sends the new value to the (fake) Tumblr API, as the one before rotation sent
the old; no page ever shows a value; another group's member can neither see nor use it (404)."""

from __future__ import annotations

import html
import re

from sqlalchemy import select

from swath import source_settings
from swath.core.config import Config
from swath.requester import Requester
from swath.store import Store, repo
from swath.store.group_credentials import GroupCredential, GroupCredentialValue
from swath.store.models import Source
from swath.store.secrets import SecretBox, generate_key
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.fakes.tumblr import API_KEY, FakeTumblr
from tests.requesterkit import swath
from tests.test_web import make_set
from tests.webkit import csrf_of, member, web_config

TYPE = "tumblr_blog_posts"  # needs one value, api_key
BLOG = "gwulibraries"  # a blog of the fake
POSTS = f"/v2/blog/{BLOG}.tumblr.com/posts"


def new_collection(page, base: str, set_id: str, name: str, credential: str) -> str:
    page.goto(f"{base}/sets/{set_id}/new?type={TYPE}")
    page.get_by_label("Name", exact=True).fill(name)
    page.get_by_label("Seeds (accounts, blogs, queries), one per line").fill(BLOG)
    page.get_by_label("Use a credential of your group").select_option(label=credential)
    page.get_by_role("button", name="Create collection").click()
    page.wait_for_url(re.compile(r".*/collections/[0-9a-f]+$"))
    return page.url.rsplit("/", 1)[1]


def test_a_group_credential_is_used_by_two_collections_rotated_once_and_never_shown(config: Config,
                                                                                   chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    ada = member(config, store, "ada", "lib")
    bob = member(config, store, "bob", "museum")
    set_id = make_set(ada, "Blogs")
    bob_set = make_set(bob, "Theirs")
    old, new = "tumblr-old-key-never-shown", API_KEY  # the fake answers the new one only
    seen: list[str] = []
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        page.goto(base + "/credentials")
        page.get_by_label("For harvest type").select_option(TYPE)
        page.get_by_role("button", name="Next: its values").click()
        page.get_by_label("Name", exact=True).fill("Library tumblr")
        page.get_by_label("api_key").fill(old)
        page.get_by_role("button", name="Save credential").click()
        page.wait_for_url(re.compile(r".*/credentials/[0-9a-f]+$"))
        credential_id = page.url.rsplit("/", 1)[1]
        assert "never shown again" in page.locator(".notice").inner_text()
        seen.append(page.content())

        first = new_collection(page, base, set_id, "one", "Library tumblr")
        seen.append(page.content())
        second = new_collection(page, base, set_id, "two", "Library tumblr")
        seen.append(page.content())
        assert "group credential Library tumblr" in page.content()

        page.goto(f"{base}/sets/{set_id}/new?type={TYPE}")  # a third with its own value, then switched over
        page.get_by_label("Name", exact=True).fill("three")
        page.get_by_label("Seeds (accounts, blogs, queries), one per line").fill(BLOG)
        page.get_by_label("api_key").fill("its-own-key")
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url(re.compile(r".*/collections/[0-9a-f]+$"))
        third = page.url.rsplit("/", 1)[1]
        page.get_by_label("Use a credential of the group instead").select_option(label="Library tumblr")
        page.get_by_role("button", name="Use this credential").click()
        page.wait_for_url(f"{base}/collections/{third}")
        assert "uses credential Library tumblr now" in page.locator(".notice").inner_text()

        with store.session() as s:
            for source_id in (first, second, third):
                source_settings.validate(s, source_id, refuse=False, comment=None)
        with FakeTumblr() as fake:  # before rotation: the old value is what the API receives (and refuses)
            before = Requester(config=config.with_api_url("tumblr", fake.url), store=store).run_here(first)
            assert before.status == "completed failure"
            assert [r.arg("api_key") for r in fake.server.requests_to(POSTS)] == [old]

        page.goto(f"{base}/credentials/{credential_id}")
        assert page.locator("#used-by li").all_inner_texts() == ["one", "three", "two"]
        page.get_by_label("New api_key").fill(new)
        page.get_by_role("button", name="Rotate credential").click()
        page.wait_for_url(f"{base}/credentials/{credential_id}")
        assert "its 3 collection(s) uses the new values" in page.locator(".notice").inner_text()
        seen.append(page.content())
        for url in ("/credentials", f"/collections/{first}", f"/collections/{second}", f"/sets/{set_id}"):
            page.goto(base + url)
            seen.append(page.content())
        assert "rotated credential" in page.content()  # the set's history

    with FakeTumblr() as fake:  # each collection's next harvest sends the new value, and only it
        requester = Requester(config=config.with_api_url("tumblr", fake.url), store=store)
        runs = [requester.run_here(source_id) for source_id in (first, second, third)]
        assert [job.status for job in runs] == ["completed success"] * 3, [job.errors for job in runs]
        sent = fake.server.requests_to(POSTS)
        assert {r.arg("api_key") for r in sent} == {new}
        assert [r.arg("offset") for r in sent].count("0") == 3  # three harvests
    with store.session() as s:
        assert all(old not in row.value and new not in row.value for row in s.scalars(select(GroupCredentialValue)))
        assert s.get(GroupCredential, credential_id).rotated_at is not None
    assert all(old not in page_html and new not in page_html for page_html in seen)

    # another group: not listed, not shown, not usable, not rotatable (a 404, as for one that does not exist)
    assert "Library tumblr" not in bob.get("/credentials").text
    assert bob.get(f"/credentials/{credential_id}").status_code == 404
    token = csrf_of(bob.get(f"/sets/{bob_set}/new?type={TYPE}").text)
    assert "Library tumblr" not in bob.get(f"/sets/{bob_set}/new?type={TYPE}").text
    made = bob.post(f"/sets/{bob_set}/new", data={"csrf": token, "type": TYPE, "name": "stolen", "seeds": "x",
                                                 "credential": credential_id})
    assert made.status_code == 404
    assert bob.post(f"/credentials/{credential_id}/rotate", data={"csrf": token, "cred.api_key": "bob"}
                    ).status_code == 404
    mine = bob.post(f"/sets/{bob_set}/new", data={"csrf": token, "type": TYPE, "name": "own", "seeds": "x",
                                                 "cred.api_key": "bobs-own"})
    assert mine.status_code == 303
    theirs = mine.headers["location"]
    assert bob.post(f"{theirs}/credential", data={"csrf": token, "credential": credential_id}).status_code == 404
    with store.session() as s:
        assert repo.find_source(s, theirs.rsplit("/", 1)[1]).credentials == {"api_key": "stored"}
        assert [src.name for src in s.scalars(select(Source).where(Source.name == "stolen"))] == []
    store.close()


def test_bad_credential_input_is_refused_with_what_to_do_and_keeps_the_old_value(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    ada = member(config, store, "ada", "lib")
    form = ada.get(f"/credentials/new?type={TYPE}").text
    token, group = csrf_of(form), re.search(r'<option value="([^"]+)"', form).group(1)

    def add(**fields: str):
        return ada.post("/credentials", data={"csrf": token, "type": TYPE, "group": group, **fields})

    assert add(name="k", **{"cred.api_key": "first-value"}).status_code == 303
    again = add(name="k", **{"cred.api_key": "second-value"})
    assert again.status_code == 400 and "has a credential named 'k' already" in html.unescape(again.text)
    empty = add(name="empty")
    assert empty.status_code == 400 and "give api_key" in empty.text
    ref = add(name="ref", **{"cred.api_key": "env:TUMBLR_KEY"})
    assert ref.status_code == 400 and "not references" in ref.text
    foreign = add(name="theirs", group="not-my-group", **{"cred.api_key": "x"})
    assert foreign.status_code == 400 and "choose one of your groups" in foreign.text
    assert "second-value" not in again.text  # a refused form keeps no value either
    with store.session() as s:
        (only,) = s.scalars(select(GroupCredential)).all()
        assert only.name == "k"
    blank = ada.post(f"/credentials/{only.id}/rotate", data={"csrf": token})
    assert blank.status_code == 400 and "give every value" in blank.text
    with store.session() as s:
        row = s.get(GroupCredentialValue, (only.id, "api_key"))
        assert SecretBox.from_config(config).open(row.scheme, row.value, what="test") == "first-value"
    store.close()


def test_secrets_migrate_reseals_group_credentials_under_the_newest_key(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    ada = member(config, store, "ada", "lib")
    form = ada.get(f"/credentials/new?type={TYPE}").text
    group = re.search(r'<option value="([^"]+)"', form).group(1)
    assert ada.post("/credentials", data={"csrf": csrf_of(form), "type": TYPE, "group": group, "name": "k",
                                          "cred.api_key": "the-value"}).status_code == 303
    new_key = generate_key()
    rotate = {"SWATH_SECRET_KEY": f"{new_key},{config.secret_key}"}
    assert swath(config, "secrets", "migrate", "--json", env=rotate) == {"encrypted": 0, "rekeyed": 1, "unchanged": 0}
    with store.session() as s:
        (row,) = s.scalars(select(GroupCredentialValue)).all()
        assert SecretBox(keys=(new_key,)).open(row.scheme, row.value, what="test") == "the-value"  # the new key alone
    store.close()
