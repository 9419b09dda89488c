"""The web application over HTTP (Starlette's TestClient on a real SQLite store): logins, sessions, CSRF,
throttling, who sees what (a member of one group gets 404s for another group's pages, by URL guessing too),
forms from a harvest type's schema, credentials never shown again."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from starlette.testclient import TestClient

from swath.core.config import Config
from swath.store import Store, repo
from swath.store.models import Secret, Source
from swath.store.web_models import WebSession
from swath.web import auth
from tests.requesterkit import pg_url  # noqa: F401
from tests.webkit import PASSWORD, client, csrf_of, group_id, login, post, preview, user, web_config


@pytest.fixture
def web(config: Config) -> Iterator[tuple[Config, Store]]:
    config = web_config(config)
    store = Store(url=config.db_url)
    yield config, store
    store.close()


def admin(config: Config, store: Store) -> TestClient:
    """A logged-in admin of group lib."""
    user(store, "ada", admin=True, groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    return c


def make_set(c, name: str) -> str:
    response = post(c, "/sets", {"name": name, "group": group_id(c)})
    assert response.status_code == 303, response.text
    return response.headers["location"].rsplit("/", 1)[1]


def make_oai(c, set_id: str, name: str = "oai", seeds: str = "https://oai.example.org/oai") -> str:
    response = post(c, f"/sets/{set_id}/new", {"type": "oai_pmh", "name": name, "seeds": seeds}, page=f"/sets/{set_id}")
    assert response.status_code == 303, response.text
    return response.headers["location"]


def test_login_sets_a_server_side_session_with_safe_cookie_flags_and_logout_ends_it(web) -> None:
    config, store = web
    user(store, "ada", admin=True)
    c = client(config, store)
    assert c.get("/").headers["location"] == "/login?next=/"
    response = login(c, "ada")
    assert response.status_code == 303
    cookie = next(h for h in response.headers.get_list("set-cookie") if h.startswith(auth.COOKIE + "="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Secure" not in cookie  # plain http here
    token = cookie.split(";", 1)[0].split("=", 1)[1]
    with store.session() as s:  # only the token's hash is stored
        assert s.get(WebSession, token) is None and len(s.scalars(select(WebSession)).all()) == 1
    assert c.get("/").status_code == 200
    assert post(c, "/logout", {}).status_code == 303
    with store.session() as s:
        assert s.scalars(select(WebSession)).all() == []
    c.cookies.set(auth.COOKIE, token)  # the old cookie opens nothing any more
    assert c.get("/").status_code == 303


def test_cookies_are_secure_over_https(web) -> None:
    config, store = web
    user(store, "ada")
    c = client(config, store)
    c.base_url = "https://testserver"  # type: ignore[misc]
    response = login(c, "ada")
    cookie = next(h for h in response.headers.get_list("set-cookie") if h.startswith(auth.COOKIE + "="))
    assert "Secure" in cookie


def test_password_change_ends_the_other_sessions(web) -> None:
    config, store = web
    user(store, "ada")
    first, second = client(config, store), client(config, store)
    login(first, "ada"), login(second, "ada")
    new = "another long password"
    response = post(first, "/account/password", {"old": PASSWORD, "new": new, "again": new}, page="/account")
    assert response.status_code == 200 and "password changed" in response.text
    assert first.get("/").status_code == 200
    assert second.get("/").status_code == 303  # logged out
    assert login(client(config, store), "ada", new).status_code == 303


def test_every_form_needs_the_session_csrf_token(web) -> None:
    config, store = web
    c = admin(config, store)
    gid = group_id(c)
    for data in ({"name": "x", "group": gid}, {"name": "x", "group": gid, "csrf": "forged"}):
        response = c.post("/sets", data=data)
        assert response.status_code == 403 and "web_csrf" in response.text
    other = client(config, store)  # a token of another session does not work here either
    login(other, "ada")
    response = c.post("/sets", data={"name": "x", "group": gid, "csrf": csrf_of(other.get("/").text)})
    assert response.status_code == 403
    with store.session() as s:
        from swath.store.web_models import CollectionSet

        assert s.scalars(select(CollectionSet)).all() == []
    # the login form has its own token (a double-submit cookie): a post from elsewhere is refused
    fresh = client(config, store)
    response = fresh.post("/login", data={"csrf": "x", "name": "ada", "password": PASSWORD})
    assert response.status_code == 403 and auth.COOKIE not in response.headers.get("set-cookie", "")


def test_logins_are_throttled_after_repeated_failures(web) -> None:
    config, store = web
    user(store, "ada")
    c = client(config, store)
    # an unknown user gets the same answer as a wrong password (nothing says which names exist); it counts too
    unknown = login(c, "nobody", "x" * 12)
    assert unknown.status_code == 401 and "wrong user name or password" in unknown.text
    for _ in range(auth.MAX_FAILURES - 1):
        response = login(c, "ada", "wrong password!")
        assert response.status_code == 401 and "wrong user name or password" in response.text
    response = login(c, "ada")  # the right password, but too late
    assert response.status_code == 429 and "too many failed logins" in response.text
    assert auth.COOKIE not in response.headers.get("set-cookie", "")


def test_a_member_of_another_group_sees_nothing_of_it_even_by_guessing_urls(web) -> None:
    check_isolation(*web)


def test_group_isolation_on_postgresql(config: Config, pg_url: str) -> None:
    from tests.requesterkit import empty_tables

    empty_tables(pg_url)
    config = web_config(config, pg_url)
    store = Store(url=pg_url)
    try:
        check_isolation(config, store)
    finally:
        store.close()


def check_isolation(config: Config, store: Store) -> None:
    user(store, "ann", groups=("alpha",))
    user(store, "bob", groups=("beta",))
    ann, bob = client(config, store), client(config, store)
    login(ann, "ann"), login(bob, "bob")
    set_id = make_set(ann, "Alpha research")
    collection = make_oai(ann, set_id)
    source_id = collection.rsplit("/", 1)[1]
    assert "Alpha research" in ann.get("/").text and "Alpha research" not in bob.get("/").text
    missing = bob.get("/sets/no-such-set")
    for url in (f"/sets/{set_id}", collection, f"/sets/{set_id}/new?type=oai_pmh"):
        response = bob.get(url)
        assert response.status_code == 404, url
        assert response.text.count("web_not_found") == missing.text.count("web_not_found")
    for url, data in ((f"{collection}/seeds", {"seeds": "https://evil.example/oai"}),
                      (f"{collection}/options", {"opt.set": "x"}), (f"{collection}/start", {}),
                      (f"{collection}/deactivate", {}), (f"{collection}/export", {"type": "oai_pmh"}),
                      (f"/sets/{set_id}/new", {"type": "oai_pmh", "name": "sneaky", "seeds": "https://x.org/"}),
                      (f"/sets/{set_id}/active", {})):
        assert post(bob, url, data).status_code == 404, url
    with store.session() as s:
        src = s.get(Source, source_id)
        assert [seed["token"] for seed in src.seeds] == ["https://oai.example.org/oai"]
        assert src.deleted_at is None and repo.list_jobs(s) == []
        assert [x.name for x in repo.list_sources(s)] == ["oai"]
    # a member may not validate (admins do), and gets the same 404
    assert post(ann, f"{collection}/validate", {"decision": "accept"}).status_code == 404
    assert bob.get("/ops").status_code == 404 and bob.get("/admin").status_code == 404


def test_collection_form_comes_from_the_type_schema_and_refuses_what_it_would(web) -> None:
    config, store = web
    c = admin(config, store)
    set_id = make_set(c, "Data")
    form = c.get(f"/sets/{set_id}/new?type=ckan").text
    from swath.messages.settings import declaration

    platform, _kind = declaration("ckan")  # type: ignore[misc]
    for option in platform.options["properties"]:
        assert f'name="opt.{option}"' in form and f'<label for="opt-{option}">' in form
    response = post(c, f"/sets/{set_id}/new", {"type": "ckan", "name": "ck", "seeds": "ckan.example.org",
                                               "opt.rows": "ten"}, page=f"/sets/{set_id}")
    assert response.status_code == 400 and "rows takes a whole number" in response.text
    assert 'value="ckan.example.org"' not in response.text and "ckan.example.org</textarea>" in response.text
    response = post(c, f"/sets/{set_id}/new", {"type": "ckan", "name": "ck", "seeds": "ckan.example.org",
                                               "opt.rows": "10"}, page=f"/sets/{set_id}")
    assert response.status_code == 400 and "is not an http(s) URL" in response.text
    response = post(c, f"/sets/{set_id}/new", {"type": "tumblr_blog_posts", "name": "tb", "seeds": "blog"},
                    page=f"/sets/{set_id}")
    assert response.status_code == 400 and "needs api_key" in response.text
    location = post(c, f"/sets/{set_id}/new", {"type": "ckan", "name": "ck", "seeds": "https://ckan.example.org",
                                               "opt.rows": "10", "opt.incremental": "false"},
                    page=f"/sets/{set_id}").headers["location"]
    with store.session() as s:
        src = s.get(Source, location.rsplit("/", 1)[1])
        assert src.options == {"rows": 10, "incremental": False} and src.collection_set_id == set_id
    # bulk seeds: pasted lines, blank ones skipped
    assert post(c, f"{location}/seeds", {"seeds": "https://a.example.org\n\n https://b.example.org \n"},
                page=location).status_code == 303
    with store.session() as s:
        assert [x["token"] for x in s.get(Source, location.rsplit("/", 1)[1]).seeds] == [
            "https://ckan.example.org", "https://a.example.org", "https://b.example.org"]
    history = c.get(location).text
    assert "added seeds" in history and "created collection" in history and "ada" in history


def test_credentials_are_sealed_never_shown_and_reusable_within_the_group(web) -> None:
    config, store = web
    c = admin(config, store)
    set_id = make_set(c, "Blogs")
    secret = "tumblr-key-that-must-not-show"
    first = post(c, f"/sets/{set_id}/new", {"type": "tumblr_blog_posts", "name": "one", "seeds": "blog-one",
                                            "cred.api_key": secret}, page=f"/sets/{set_id}").headers["location"]
    page = c.get(first).text
    assert secret not in page and "stored, encrypted" in page
    form = c.get(f"/sets/{set_id}/new?type=tumblr_blog_posts").text
    assert secret not in form and "Reuse the credentials of" in form
    second = post(c, f"/sets/{set_id}/new", {"type": "tumblr_blog_posts", "name": "two", "seeds": "blog-two",
                                             "reuse": first.rsplit("/", 1)[1]},
                  page=f"/sets/{set_id}").headers["location"]
    with store.session() as s:
        rows = s.scalars(select(Secret)).all()
        assert len(rows) == 2 and all(secret not in row.value for row in rows)
        src = s.get(Source, second.rsplit("/", 1)[1])
        from swath.store.secrets import SecretBox

        assert repo.secrets_of(s, src, SecretBox.from_config(config)) == {"api_key": secret}
    assert secret not in c.get(second).text and secret not in "".join(c.get(u).text for u in ("/", f"/sets/{set_id}"))


def test_export_files_are_served_only_from_the_exports_folder(web) -> None:
    config, store = web
    c = admin(config, store)
    set_id = make_set(c, "Files")
    source_id = make_oai(c, set_id).rsplit("/", 1)[1]
    (config.data_root / "exports" / "e1").mkdir(parents=True)
    (config.data_root / "exports" / "e1" / "rows.csv").write_text("a,b\n1,2\n")
    (config.data_root / "exports" / "e1" / "rows.csv.part").write_text("half")
    (config.data_root / "secret.txt").write_text("not for download")
    from swath.store import web_repo

    with store.session() as s:
        repo.add_export(s, export_id="e1", export_type="oai_pmh", fmt="csv", path="exports/e1", collection_id="x")
        repo.add_export(s, export_id="e2", export_type="oai_pmh", fmt="csv", path=".", collection_id="x")
        for export_id in ("e1", "e2"):
            web_repo.add_export_request(s, export_id=export_id, set_id=set_id, source_id=source_id, user="ada")
    page = c.get("/exports/e1").text
    assert "rows.csv" in page and "rows.csv.part" not in page
    response = c.get("/exports/e1/files/rows.csv")
    assert response.status_code == 200 and response.text == "a,b\n1,2\n"
    assert "attachment" in response.headers["content-disposition"]
    for url in ("/exports/e1/files/rows.csv.part", "/exports/e1/files/..%2Fsecret.txt", "/exports/e2/files/secret.txt",
                "/exports/e1/files/%2E%2E"):
        assert c.get(url).status_code == 404, url


def test_adduser_makes_the_first_admin_from_stdin(config: Config) -> None:
    from click.testing import CliRunner

    from swath.cli import cli
    from tests.requesterkit import cli_env

    out = CliRunner().invoke(cli, ["web", "adduser", "--admin", "--group", "library", "root", "--json"],
                             input=PASSWORD + "\n", env=cli_env(config))
    assert out.exit_code == 0, out.output
    assert '"admin": true' in out.output
    short = CliRunner().invoke(cli, ["web", "adduser", "shorty"], input="short\n", env=cli_env(config))
    assert short.exit_code == 1 and "at least 10 characters" in short.output
    store = Store(url=config.db_url)
    c = client(web_config(config), store)
    assert login(c, "root").status_code == 303
    assert re.search(r"library", c.get("/account").text)
    store.close()


def test_preview_is_a_dry_run_that_writes_nothing(web) -> None:
    from swath.messages import codes
    from tests.fakes.oai import GeneratedRepository

    config, store = web
    user(store, "ada", groups=("lib",))
    c = client(config, store)
    login(c, "ada")
    set_id = make_set(c, "Preview")
    repository = GeneratedRepository(count=17, per_page=5)
    with repository.server as server:
        collection = make_oai(c, set_id, seeds=f"{server.url}/oai")
        assert "Preview (dry run)" in c.get(collection).text  # before validation: it writes nothing
        response = preview(c, collection)
    assert response.status_code == 200, response.text
    assert f"{repository.count} done" in response.text and codes.DRY_RUN in response.text
    assert repository.pages_served == [1, 2, 3, 4]
    assert not list(config.data_root.rglob("*.warc.gz")) and not (config.data_root / "collections").exists()
    assert list((config.data_root / ".swath" / "previews").iterdir()) == []
    assert "previewed" in c.get(collection).text


def test_schedules_are_set_through_the_same_checks_as_the_cli(web) -> None:
    config, store = web
    c = admin(config, store)
    collection = make_oai(c, make_set(c, "Sched"))
    source_id = collection.rsplit("/", 1)[1]
    every = post(c, f"{collection}/schedule", {"kind": "every", "expr": "6", "unit": "h"}, page=collection)
    assert every.status_code == 303
    with store.session() as s:
        src = s.get(Source, source_id)
        assert (src.schedule_kind, src.schedule_expr) == ("interval", "6h") and src.next_due is not None
    refused = post(c, f"{collection}/schedule", {"kind": "cron", "expr": "61 * * * *"}, page=collection)
    assert refused.status_code == 400 and "bad_schedule" in refused.text
    assert post(c, f"{collection}/schedule", {"kind": "cron", "expr": "0 3 * * 1"}, page=collection).status_code == 303
    assert "cron 0 3 * * 1" in c.get(collection).text
    assert post(c, f"{collection}/schedule", {"kind": "none"}, page=collection).status_code == 303
    with store.session() as s:
        src = s.get(Source, source_id)
        assert src.schedule_kind is None and src.next_due is None
