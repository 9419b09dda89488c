"""Helpers for the web's Chromium journeys (no tests here): one headless Chromium per module, the app served
on a real uvicorn (tests/test_web_e2e.py's `serving`), a page logged in as a user."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from swath.core.config import Config
from swath.store import Store
from swath.web.app import create_app
from tests.test_web_e2e import CHROMIUM, serving
from tests.webkit import PASSWORD


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield browser
        browser.close()


@contextlib.contextmanager
def site(config: Config, store: Store) -> Iterator[str]:
    """The web app on this test's store, served; its base URL."""
    with serving(create_app(config=config, store=store)) as base:
        yield base


@contextlib.contextmanager
def logged_in(browser: Any, base: str, name: str) -> Iterator[Any]:
    """A page of a new browser context (its own cookies) logged in as `name`."""
    context = browser.new_context(viewport={"width": 1280, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(60_000)
    page.goto(base + "/login")
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(base + "/")
    try:
        yield page
    finally:
        context.close()
