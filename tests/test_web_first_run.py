"""First steps as the README gives them: with no SWATH_SECRET_KEY(_FILE), `swath web adduser` (and `swath web`)
make the key for stored credentials under the data root, mode 0600, and say where; `--group` puts the first admin
in a group; the web then stores a typed credential sealed with that key instead of answering 400; a
`postgresql://` store URL (docs/configuration.md) works with the installed driver."""

from __future__ import annotations

import dataclasses
import stat

from click.testing import CliRunner
from sqlalchemy import select

from swath.core.config import Config
from swath.store import Store, repo, web_repo
from swath.store.models import Secret
from swath.store.secrets import data_root_key
from tests.requesterkit import cli_env, pg_url  # noqa: F401
from tests.test_web import make_set
from tests.webkit import PASSWORD, client, login, post


def adduser(config: Config, *args: str):
    from swath.cli import cli

    env = {**cli_env(config), "SWATH_SECRET_KEY": "", "SWATH_SECRET_KEY_FILE": ""}
    return CliRunner().invoke(cli, ["web", "adduser", *args], input=PASSWORD + "\n", env=env)


def test_the_first_adduser_makes_the_key_file_and_the_web_stores_credentials_with_it(config: Config) -> None:
    key = data_root_key(config)
    assert not key.exists()
    out = adduser(config, "--admin", "--group", "Library", "ada")
    assert out.exit_code == 0, out.output
    assert f"made the key for credentials stored from the web: {key}" in out.stderr
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and key.is_relative_to(config.data_root)
    first = key.read_text()
    out = adduser(config, "bob")
    assert out.exit_code == 0 and f"using the key for credentials stored from the web: {key}" in out.stderr
    assert key.read_text() == first  # kept, never replaced

    config = dataclasses.replace(config, secret_key="", secret_key_file="")
    store = Store(url=config.db_url)
    with store.session() as s:
        assert [g.name for g in web_repo.groups_of(s, web_repo.user_named(s, "ada"))] == ["Library"]
    c = client(config, store)
    assert login(c, "ada").status_code == 303
    set_id = make_set(c, "Blogs")  # the admin's group is offered: ada is in one
    response = post(c, f"/sets/{set_id}/new", {"type": "tumblr_blog_posts", "name": "Blog", "seeds": "gwulibraries",
                                               "cred.api_key": "typed-api-key"}, page=f"/sets/{set_id}")
    assert response.status_code == 303, response.text
    with store.session() as s:
        (sealed,) = s.scalars(select(Secret))
        assert sealed.scheme == "fernet" and "typed-api-key" not in sealed.value
    store.close()


def test_a_key_file_open_to_others_is_refused(config: Config) -> None:
    key = data_root_key(config)
    key.parent.mkdir(parents=True)
    key.write_text("not used\n")
    key.chmod(0o644)
    out = adduser(config, "ada")
    assert out.exit_code == 1 and "chmod 600" in out.output


def test_a_postgresql_url_without_a_driver_uses_the_installed_one(pg_url: str) -> None:  # noqa: F811
    """docs/configuration.md's `postgresql://…` works (SQLAlchemy 2.1 would want psycopg 3, not installed)."""
    plain = pg_url.replace("postgresql+psycopg2://", "postgresql://")
    store = Store(url=plain)
    with store.session() as s:
        assert repo.list_sources(s) is not None
    store.close()
