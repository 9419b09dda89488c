"""What the command line made is in the web for admins (as docs/web.md says) and for no one else: a source made
with `swath harvest create` outside the web's collection sets, and an export started with `swath export start`."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store
from tests.requesterkit import swath
from tests.webkit import client, login, member, user, web_config


def test_an_admin_sees_sources_and_exports_made_on_the_command_line(config: Config, broker) -> None:
    config = web_config(config)
    swath(config, "broker", "setup")
    made = swath(config, "harvest", "create", "CLI repository", "--type", "oai_pmh", "--seed",
                 "https://oai.example.org/oai", "--collection-set", "cli-set", "--json")
    export = swath(config, "export", "start", "oai_pmh", "--source", "CLI repository", "--json")
    store = Store(url=config.db_url)
    user(store, "root", admin=True)
    admin = client(config, store)
    login(admin, "root")
    home = admin.get("/").text
    assert "CLI repository" in home and f'href="/collections/{made["id"]}"' in home and "cli-set" in home
    assert admin.get(f"/collections/{made['id']}").status_code == 200
    exports = admin.get("/exports").text
    assert f'href="/exports/{export["id"]}"' in exports and "command line" in exports
    page = admin.get(f"/exports/{export['id']}")
    assert page.status_code == 200 and "command line" in page.text
    ann = member(config, store, "ann", "alpha")
    assert "CLI repository" not in ann.get("/").text and export["id"] not in ann.get("/exports").text
    assert ann.get(f"/exports/{export['id']}").status_code == 404
    store.close()
