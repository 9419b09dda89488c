"""Delete, retain, purge in Chromium (issue 32, SFM #1134): a member deletes an export (its files go at once)
and a collection (the confirmation names what happens to its WARCs: kept N days, then purged); both leave the
lists and the change history says so. Another group's user gets 404 on every delete URL and nothing changes.
An admin deletes a collection and purges it now: the page reports the bytes freed, equal to the sizes of its
WARC and export files computed here; the WARC index has no row of it left, and a planted link's target outside
the data root is untouched."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from sqlalchemy import select

from swath.core.config import Config
from swath.store import Store
from swath.store.models import Export, Source, Warc
from swath.store.web_models import Change, CollectionSet, ExportRequest
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.purgekit import export_on_disk, planted_link, warcs_on_disk
from tests.test_web import make_oai, make_set
from tests.webkit import client, login, member, post, user, web_config

DAYS = 7


def test_members_delete_admins_purge_and_other_groups_get_404(config: Config, chromium,  # noqa: F811
                                                               tmp_path: Path) -> None:
    config = web_config(dataclasses.replace(config, purge_after_days=DAYS))
    store = Store(url=config.db_url)
    ada = member(config, store)
    user(store, "bob", groups=("other",))
    user(store, "root", admin=True)
    set_id = make_set(ada, "Papers")
    theses = make_oai(ada, set_id, name="Theses").rsplit("/", 1)[1]
    letters = make_oai(ada, set_id, name="Letters", seeds="https://oai.example.org/letters").rsplit("/", 1)[1]
    kept = warcs_on_disk(config, store, theses, [b"theses warc " * 100])
    letter_warcs = warcs_on_disk(config, store, letters, [b"a" * 1234, b"b" * 4321])
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"not the archive's to remove")
    link = planted_link(config, store, letters, outside)
    e1_files = export_on_disk(config, store, theses, "e1", {"theses.csv": b"id\n1\n", "theses-2.csv": b"id\n2\n"})
    e2_files = export_on_disk(config, store, letters, "e2", {"letters.csv": b"id,title\n" * 50})
    expected_freed = sum(p.stat().st_size for p in [*letter_warcs, *e2_files])

    bob = client(config, store)
    login(bob, "bob")
    for url in (f"/collections/{letters}/delete", f"/sets/{set_id}/delete", "/exports/e2/delete"):
        assert post(bob, url, {"confirm": "yes", "purge": "now"}).status_code == 404, url
    with store.session() as s:
        assert s.get(Source, letters).deleted_at is None and s.get(Export, "e2") is not None

    with site(config, store) as base:
        with logged_in(chromium, base, "ada") as page:
            page.goto(f"{base}/exports/e1")
            page.get_by_role("button", name="Delete this export…").click()
            assert "removed now" in page.locator("#consequence").inner_text()
            assert all(p.exists() for p in e1_files)  # asked, not done
            page.get_by_role("button", name="Delete", exact=True).click()
            page.wait_for_url(f"{base}/exports")
            assert "bytes freed" in page.locator(".notice").inner_text()
            assert page.locator('a[href="/exports/e1"]').count() == 0
            assert not any(p.exists() for p in e1_files)

            page.goto(f"{base}/collections/{theses}")
            page.get_by_role("button", name="Delete this collection…").click()
            fate = page.locator("#warcs-fate").inner_text()
            assert f"Its {len(kept)} WARC file(s)" in fate and f"kept for {DAYS} day(s)" in fate
            assert page.get_by_role("button", name="Delete and purge now").count() == 0  # admins only
            page.get_by_role("button", name="Delete", exact=True).click()
            page.wait_for_url(f"{base}/sets/{set_id}")
            assert page.locator(f'a[href="/collections/{theses}"]').count() == 0
            assert page.locator(f'a[href="/collections/{letters}"]').count() > 0
            assert "deleted collection Theses" in page.content()
            assert page.goto(f"{base}/collections/{theses}").status == 404
        assert all(p.exists() for p in kept)  # retained until the expiry
        with store.session() as s:
            assert s.get(Source, theses).purge_after is not None

        with logged_in(chromium, base, "root") as page:
            page.goto(f"{base}/collections/{letters}")
            page.get_by_role("button", name="Delete this collection…").click()
            page.get_by_role("button", name="Delete and purge now").click()
            page.wait_for_url(f"{base}/sets/{set_id}")
            notice = page.locator(".notice").inner_text()
            freed = re.search(r"([\d,]+) bytes freed", notice)
            assert freed and int(freed.group(1).replace(",", "")) == expected_freed, notice
            assert "1 path(s) were left alone" in notice  # the planted link

    assert not any(p.exists() for p in [*letter_warcs, *e2_files]) and link.is_symlink()
    assert outside.read_bytes() == b"not the archive's to remove"
    with store.session() as s:
        assert s.get(Source, letters) is None
        assert list(s.scalars(select(Warc).where(Warc.collection_id.in_(
            [p.parent.parent.parent.name for p in letter_warcs])))) == []
        assert s.get(Export, "e2") is None and s.get(ExportRequest, "e2") is None
        assert s.get(Export, "e1") is None and s.get(ExportRequest, "e1") is None
        actions = set(s.scalars(select(Change.action).where(Change.collection_set_id == set_id)))
        assert {"deleted export", "deleted collection Theses", "deleted collection Letters",
                "purged collection Letters"} <= actions
    store.close()


def test_a_deleted_set_leaves_with_its_collections_and_an_admin_purge_removes_all(config: Config,
                                                                                  tmp_path: Path) -> None:
    config = web_config(dataclasses.replace(config, purge_after_days=DAYS))
    store = Store(url=config.db_url)
    ada = member(config, store)
    set_id = make_set(ada, "Letters 1900")
    collections = [make_oai(ada, set_id, name=f"Box {n}", seeds=f"https://oai.example.org/{n}").rsplit("/", 1)[1]
                   for n in (1, 2)]
    warcs = [p for n, ident in enumerate(collections) for p in warcs_on_disk(config, store, ident, [b"w" * (n + 10)])]
    asked = post(ada, f"/sets/{set_id}/delete", {}, page=f"/sets/{set_id}")
    assert asked.status_code == 200 and "2 collection(s)" in asked.text and f"kept for {DAYS} day(s)" in asked.text
    done = post(ada, f"/sets/{set_id}/delete", {"confirm": "yes"}, page=f"/sets/{set_id}")
    assert done.status_code == 303 and done.headers["location"] == "/"
    assert f"/sets/{set_id}" not in ada.get("/").text and ada.get(f"/sets/{set_id}").status_code == 404
    assert all(ada.get(f"/collections/{c}").status_code == 404 for c in collections)
    assert post(ada, f"/sets/{set_id}/delete", {"confirm": "yes", "purge": "now"}).status_code == 404
    assert all(p.exists() for p in warcs)  # retained
    with store.session() as s:
        assert all(s.get(Source, c).purge_after is not None for c in collections)

    user(store, "root", admin=True)
    root = client(config, store)
    login(root, "root")
    set_two = make_set(root, "Scratch")
    extra = make_oai(root, set_two, name="Scratch box").rsplit("/", 1)[1]
    scratch = warcs_on_disk(config, store, extra, [b"s" * 77, b"t" * 5])
    freed = sum(p.stat().st_size for p in scratch)
    asked = post(root, f"/sets/{set_two}/delete", {}, page=f"/sets/{set_two}")
    assert "Delete and purge now" in asked.text
    done = post(root, f"/sets/{set_two}/delete", {"confirm": "yes", "purge": "now"}, page=f"/sets/{set_two}")
    assert done.status_code == 303
    assert f"{freed:,} bytes freed" in root.get("/").text
    assert not any(p.exists() for p in scratch)
    with store.session() as s:
        assert s.get(CollectionSet, set_two) is None and s.get(Source, extra) is None
        assert s.scalars(select(Warc).where(Warc.collection_set_id == set_two)).all() == []
    store.close()
