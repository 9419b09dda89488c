"""SWATH_WEB_URL: the public address of `swath web`, possibly under a path prefix behind a reverse proxy. It is
checked at start-up (http/https, a host, no user, query or fragment: else one line with code web_url_invalid),
the CLI prints links at it, and the application served under its prefix (root_path) makes every link, form,
redirect, script and cookie carry that prefix, in Chromium. (Mails: tests/test_notify.py.)"""

from __future__ import annotations

import contextlib
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from swath.cli import cli
from swath.core.config import Config
from swath.core.weburl import DEFAULT_WEB_URL, WebUrlInvalid
from swath.messages import codes
from swath.store import Store
from swath.web.app import create_app
from tests.browserkit import chromium  # noqa: F401
from tests.requesterkit import cli_env
from tests.test_web import make_oai, make_set
from tests.test_web_e2e import serving
from tests.webkit import PASSWORD, member, web_config

PREFIX = "/swath"


@pytest.mark.parametrize("raw, expected", [
    ("", DEFAULT_WEB_URL),
    ("https://Archive.Example.org/swath/", "https://archive.example.org/swath"),
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000"),
    ("https://archive.example.org/tools/swath", "https://archive.example.org/tools/swath"),
])
def test_a_good_address_is_kept_without_its_last_slash(raw: str, expected: str) -> None:
    assert Config.from_env({"SWATH_WEB_URL": raw}).web_url == expected


@pytest.mark.parametrize("raw", ["ftp://archive.example.org/", "archive.example.org/swath", "javascript:alert(1)",
                                 "https://archivist:hunter2@archive.example.org/", "https://archive.example.org/?a=1",
                                 "https://archive.example.org/#top", "http://", "http://archive.example.org:99999/",
                                 "https://archive.example.org/my swath", "https://archive.example.org/a\nb"])
def test_anything_else_is_refused_in_one_coded_line(raw: str) -> None:
    with pytest.raises(WebUrlInvalid) as refused:
        Config.from_env({"SWATH_WEB_URL": raw})
    assert refused.value.code == codes.WEB_URL_INVALID and "\n" not in refused.value.message
    assert "hunter2" not in refused.value.message


def test_the_cli_refuses_a_bad_address_and_prints_links_at_a_good_one(config: Config) -> None:
    env = {**cli_env(config), "SWATH_WEB_URL": "gopher://archive.example.org/"}
    refused = CliRunner().invoke(cli, ["config"], env=env)
    assert refused.exit_code == 1
    assert refused.output.strip().splitlines() == [refused.output.strip()]  # one line
    assert refused.output.startswith(f"error [{codes.WEB_URL_INVALID}]: SWATH_WEB_URL must be")
    env["SWATH_WEB_URL"] = "https://archive.example.org/swath/"
    made = CliRunner().invoke(cli, ["web", "adduser", "--admin", "root"], input=PASSWORD + "\n", env=env)
    assert made.exit_code == 0, made.output
    assert "log in at https://archive.example.org/swath/login" in made.output


@contextlib.contextmanager
def under_prefix(config: Config, store: Store):
    """The app as a proxy in front of `swath web` presents it: under PREFIX (Mount gives the scope the root_path
    and path uvicorn gives behind a proxy that passes /swath/x on as /x, with --root-path /swath)."""
    from starlette.applications import Starlette
    from starlette.routing import Mount

    outer = Starlette(routes=[Mount(PREFIX, app=create_app(config=config, store=store))])
    with serving(outer) as base:
        yield base


def test_every_link_form_redirect_and_script_works_under_a_prefix(config: Config, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Papers")
    collection = make_oai(c, set_id, name="First repository")
    seen: list[tuple[int, str]] = []
    with under_prefix(config, store) as base:
        context = chromium.new_context(viewport={"width": 1280, "height": 900})
        page = context.new_page()
        page.set_default_timeout(60_000)
        page.on("response", lambda r: seen.append((r.status, r.url)))
        try:
            page.goto(base + PREFIX + "/status")  # no session: to the login page, and back after it
            assert urlsplit(page.url).path == PREFIX + "/login"
            page.get_by_label("User name").fill("ada")
            page.get_by_label("Password").fill(PASSWORD)
            page.get_by_role("button", name="Log in").click()
            page.wait_for_url(base + PREFIX + "/status")
            page.wait_for_selector("#live[data-updated]")  # live.js fetched the parts (under the prefix) at least once
            assert page.evaluate("getComputedStyle(document.querySelector('header.top')).display") == "flex"
            page.goto(base + PREFIX + "/")
            page.get_by_role("link", name="Papers").first.click()
            page.wait_for_url(base + PREFIX + f"/sets/{set_id}")
            page.get_by_role("link", name="First repository").first.click()
            page.wait_for_url(base + PREFIX + collection)
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Exports").click()
            page.wait_for_url(base + PREFIX + "/exports")
            page.get_by_role("button", name="Log out").click()
            page.wait_for_url(base + PREFIX + "/login")
        finally:
            context.close()
    assert seen, "Chromium saw no response"
    for status, url in seen:
        assert urlsplit(url).path.startswith(PREFIX + "/"), url  # nothing outside the prefix was asked for
        assert status < 400, (status, url)
    store.close()


def test_swath_web_serves_under_the_prefix_of_swath_web_url(config: Config) -> None:
    """The real command: uvicorn gets SWATH_WEB_URL's path as root_path, so what the proxy passes on without the
    prefix is answered with links, redirects and cookies that have it."""
    import httpx

    from tests.webprocess import web_process

    with web_process(config, SWATH_WEB_URL=f"https://archive.example.org{PREFIX}/") as web:
        to_login = httpx.get(f"{web.url}/status", timeout=60)  # as the proxy passes /swath/status on
        login = httpx.get(f"{web.url}/login", timeout=60)
    assert to_login.status_code == 303 and to_login.headers["location"] == f"{PREFIX}/login?next={PREFIX}/status"
    assert f'href="{PREFIX}/static/app.css"' in login.text and f'action="{PREFIX}/login"' in login.text
    assert f"Path={PREFIX}/login" in login.headers["set-cookie"]
