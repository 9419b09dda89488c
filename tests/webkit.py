"""Helpers for the web application's tests (no tests here): an app on a test's store, logging in, forms."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from starlette.testclient import TestClient

from swath.core.config import Config
from swath.store import Store
from swath.web.app import create_app
from swath.web.auth import add_user
from tests.requesterkit import TEST_SECRET_KEY

PASSWORD = "correct horse battery"
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def web_config(config: Config, db_url: str | None = None) -> Config:
    return dataclasses.replace(config, secret_key=TEST_SECRET_KEY, db_url=db_url or config.db_url)


def client(config: Config, store: Store) -> TestClient:
    return TestClient(create_app(config=config, store=store), base_url="http://testserver", follow_redirects=False)


def user(store: Store, name: str, *, admin: bool = False, groups: tuple[str, ...] = ()) -> None:
    add_user(store, name=name, password=PASSWORD, is_admin=admin, groups=list(groups))


def csrf_of(html: str) -> str:
    found = CSRF.search(html)
    assert found, "no CSRF field on the page"
    return found.group(1)


def login(c: TestClient, name: str, password: str = PASSWORD) -> Any:
    token = csrf_of(c.get("/login").text)
    return c.post("/login", data={"csrf": token, "name": name, "password": password, "next": "/"})


def post(c: TestClient, url: str, data: dict[str, Any], *, page: str = "/") -> Any:
    """Post a form with the CSRF token of the session (read from `page`)."""
    return c.post(url, data={"csrf": csrf_of(c.get(page).text), **data})


def preview(c: Any, collection: str) -> Any:
    """Run a collection's preview: its result page (the POST answers 303 to it: Post/Redirect/Get), or the
    POST's own answer when it was refused."""
    ran = post(c, f"{collection}/preview", {}, page=collection)
    if ran.status_code != 303:
        return ran
    assert ran.headers["location"].startswith(f"{collection}/preview/"), ran.headers["location"]
    return c.get(ran.headers["location"])


def group_id(c: TestClient) -> str:
    found = re.search(r'<select id="set-group" name="group"><option value="([^"]+)"', c.get("/").text)
    assert found, "no group to choose on the home page"
    return found.group(1)


def member(config: Config, store: Store, name: str = "ada", group: str = "lib") -> TestClient:
    """A client logged in as a new user `name` of `group` (no admin)."""
    user(store, name, groups=(group,))
    c = client(config, store)
    login(c, name)
    return c
