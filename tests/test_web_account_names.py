"""Accounts with long names and group forms that name someone (Chromium): a 100-character user name wraps so
the Role, Since and disable columns stay on the page; a group name has a limit; a member name that is nobody's
is refused, not silently dropped."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store, web_repo
from swath.web.fields import NAME_MAX
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.webkit import user, web_config

LONG_USER = "a" * 100  # the longest user name (auth.add_user), unbroken


def test_long_names_keep_the_accounts_table_on_the_page_and_unknown_members_are_refused(
        config: Config, broker, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "root", admin=True, groups=("lib",))
    user(store, LONG_USER, groups=("lib",))
    with site(config, store) as base, logged_in(chromium, base, "root") as page:
        page.goto(base + "/admin")
        card = page.locator("section.card", has=page.get_by_role("heading", name="Users")).bounding_box()
        assert card is not None
        row = page.locator("tr", has=page.get_by_role("link", name=LONG_USER))
        for cell in (row.locator("td").nth(1), row.locator("td").nth(2), row.get_by_role("button", name="disable")):
            box = cell.bounding_box()  # inside the Users card, not pushed past it (or under the next card)
            assert box is not None and box["x"] + box["width"] <= card["x"] + card["width"], (box, card)
        page.locator("#g-name").fill("Reading room")
        page.locator("#g-member").fill("nobody")
        page.get_by_role("button", name="Save group").click()
        assert "no (enabled) user is named 'nobody'" in page.content()
        page.goto(base + "/admin")
        page.locator("#g-name").evaluate("(e, v) => { e.removeAttribute('maxlength'); e.value = v }",
                                         "g" * (NAME_MAX + 1))
        page.get_by_role("button", name="Save group").click()
        assert f"Group name: at most {NAME_MAX} characters" in page.content()
    with store.session() as s:
        assert [g.name for g in web_repo.list_groups(s)] == ["lib"]
    store.close()
