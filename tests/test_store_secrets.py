"""Credential values at rest: sealed in the real SQLite file and PostgreSQL row, opened only with the right key,
legacy plain rows read and re-encrypted, the store file private, the key file checked."""

from __future__ import annotations

import base64
import logging
import stat
import urllib.parse
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import text

from swath.core.config import Config
from swath.messages import codes
from swath.requester import Requester, RequestError
from swath.store import Store, repo
from swath.store.db import alembic_config
from swath.store.secrets import CredentialKeyInvalid, SecretBox, generate_key, load_keys
from tests.reliability.kit import leaks
from tests.requesterkit import TEST_SECRET_KEY, db_url, pg_url, swath  # noqa: F401  (fixtures)

SECRET = "tumblr-key-Zq81-never-at-rest"


def forms(secret: str) -> list[str]:
    """The secret as a scan must look for it: itself, URL-encoded, base64."""
    return [secret, urllib.parse.quote(secret, safe=""), base64.b64encode(secret.encode()).decode()]


def rows(url: str) -> list[tuple[str, str, str]]:
    """(name, scheme, value) of every secrets row, read with plain SQL (no swath code in between)."""
    store = Store(url=url, migrate=False)
    with store.engine.connect() as conn:
        found = [tuple(r) for r in conn.execute(text("SELECT name, scheme, value FROM secrets ORDER BY name"))]
    store.close()
    return found  # type: ignore[return-value]


def store_files(config: Config, url: str) -> list[tuple[Path, bytes]]:
    """The SQLite file and its -wal/-shm, raw; nothing for PostgreSQL (its row is read with SQL)."""
    if not url.startswith("sqlite"):
        return []
    return [(p, p.read_bytes()) for p in config.data_root.glob("swath.sqlite*")]


def requester(config: Config, url: str, key: str | None) -> Requester:
    keys = (key,) if key else ()
    return Requester(config=config, store=Store(url=url), box=SecretBox(keys=keys))


def start_credentials(config: Config, url: str, key: str | None, name: str = "blog") -> dict:
    req = requester(config, url, key)
    with req.store.session() as s:
        source = repo.find_source(s, name)
    try:
        return req.harvest_start(source, "job-1")["credentials"]
    finally:
        req.store.close()


def test_a_stored_value_is_sealed_on_disk_and_opens_only_with_its_key(config: Config, db_url: str,  # noqa: F811
                                                                       tmp_path: Path) -> None:
    value_file = tmp_path / "key.txt"
    value_file.write_text(SECRET + "\n")
    env = {"SWATH_DB_URL": db_url}
    src = swath(config, "harvest", "create", "blog", "--type", "generic_pages", "--seed", "http://127.0.0.1:9/",
                "--credential", f"api_key=@{value_file}", "--json", env=env)
    assert src["credentials"] == {"api_key": "stored"}

    ((name, scheme, stored),) = rows(db_url)
    assert (name, scheme) == ("api_key", "fernet")
    assert not leaks(forms(SECRET), [("row", stored.encode())])
    assert not leaks(forms(SECRET), store_files(config, db_url))
    assert start_credentials(config, db_url, TEST_SECRET_KEY) == {"api_key": SECRET}  # the newline was dropped

    with pytest.raises(RequestError) as wrong:
        start_credentials(config, db_url, generate_key())
    assert wrong.value.code == codes.CREDENTIAL_KEY_INVALID and "api_key" in wrong.value.message
    with pytest.raises(RequestError) as missing:
        start_credentials(config, db_url, None)
    assert missing.value.code == codes.CREDENTIAL_KEY_MISSING and "SWATH_SECRET_KEY" in missing.value.message
    assert not leaks([SECRET, TEST_SECRET_KEY], [("errors", (wrong.value.message + missing.value.message).encode())])

    # the CLI refuses the launch the same way, and says nothing of the value
    swath(config, "harvest", "validate", "blog", env=env)
    out = swath(config, "harvest", "launch", "blog", "--json", expect=1,
                env={**env, "SWATH_SECRET_KEY": generate_key()})
    assert out["error"]["code"] == codes.CREDENTIAL_KEY_INVALID and SECRET not in str(out)


def test_without_a_key_a_value_is_refused_and_env_references_still_work(config: Config) -> None:
    no_key = {"SWATH_SECRET_KEY": ""}
    out = swath(config, "harvest", "create", "blog", "--type", "generic_pages", "--credential", f"api_key={SECRET}",
                "--json", env=no_key, expect=1)
    assert out["error"]["code"] == codes.CREDENTIAL_KEY_MISSING
    assert "SWATH_SECRET_KEY" in out["error"]["message"] and SECRET not in str(out)
    assert swath(config, "harvest", "sources", "--json", env=no_key) == []  # nothing was kept

    swath(config, "harvest", "create", "blog", "--type", "generic_pages", "--credential", "api_key=env:BLOG_KEY",
          env=no_key)
    assert rows(config.db_url) == []
    req = Requester(config=config, store=Store(url=config.db_url), env={"BLOG_KEY": SECRET}, box=SecretBox())
    with req.store.session() as s:
        source = repo.find_source(s, "blog")
    assert req.harvest_start(source, "job-1")["credentials"] == {"api_key": SECRET}
    req.store.close()


def test_plain_rows_from_before_read_with_a_warning_until_migrate_seals_them(config: Config, db_url: str,  # noqa: F811
                                                                              caplog: pytest.LogCaptureFixture) -> None:
    """A store written by the previous version (revision 0001, values in plain text), then upgraded."""
    store = Store(url=db_url)
    cfg = alembic_config()
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0001")
        conn.execute(text("INSERT INTO sources (id, name, harvest_type, platform, seeds, options, credentials, "
                          "collection_set_id, collection_id, validation, created_at) VALUES ('s1', 'blog', "
                          "'generic_pages', 'generic', '[]', '{}', '{\"api_key\": \"stored\"}', 'set', 's1', "
                          "'accepted', '2026-01-01 00:00:00')"))
        conn.execute(text("INSERT INTO secrets (source_id, name, value) VALUES ('s1', 'api_key', :v)"), {"v": SECRET})
    with store.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")
    store.close()
    assert rows(db_url) == [("api_key", "plain", SECRET)]
    if db_url.startswith("sqlite"):  # the scan below can see a value in the file
        assert leaks([SECRET], store_files(config, db_url))

    with caplog.at_level(logging.WARNING, logger="swath.store.secrets"):
        assert start_credentials(config, db_url, None) == {"api_key": SECRET}  # no key needed to read it
    warned = [r.getMessage() for r in caplog.records if "plain text" in r.getMessage()]
    assert warned and "swath secrets migrate" in warned[0] and SECRET not in " ".join(warned)

    env = {"SWATH_DB_URL": db_url}
    assert swath(config, "secrets", "migrate", "--json", env={**env, "SWATH_SECRET_KEY": ""}, expect=1)[
        "error"]["code"] == codes.CREDENTIAL_KEY_MISSING
    assert swath(config, "secrets", "migrate", "--json", env=env) == {"encrypted": 1, "rekeyed": 0, "unchanged": 0}
    ((_, scheme, stored),) = rows(db_url)
    assert scheme == "fernet" and not leaks(forms(SECRET), [("row", stored.encode())])
    # the plain copy is gone from the file too, not only from the row (secure_delete, VACUUM, WAL truncated)
    assert not leaks(forms(SECRET), store_files(config, db_url))
    assert start_credentials(config, db_url, TEST_SECRET_KEY) == {"api_key": SECRET}

    # rotation: the new key first, the old after it; migrate re-seals under the new one
    new_key = generate_key()
    rotate = {**env, "SWATH_SECRET_KEY": f"{new_key},{TEST_SECRET_KEY}"}
    assert swath(config, "secrets", "migrate", "--json", env=rotate) == {"encrypted": 0, "rekeyed": 1, "unchanged": 0}
    assert swath(config, "secrets", "migrate", "--json", env=rotate) == {"encrypted": 0, "rekeyed": 0, "unchanged": 1}
    assert start_credentials(config, db_url, new_key) == {"api_key": SECRET}
    with pytest.raises(RequestError) as old:
        start_credentials(config, db_url, TEST_SECRET_KEY)
    assert old.value.code == codes.CREDENTIAL_KEY_INVALID


def test_the_sqlite_store_is_private_to_its_owner(tmp_path: Path) -> None:
    db = tmp_path / "fresh" / "root" / "swath.sqlite"
    store = Store(url=f"sqlite:///{db}")
    with store.session() as s:  # a write, so the -wal and -shm files exist too
        repo.create_source(s, name="x", harvest_type="generic_pages", platform="generic", seeds=[], options={},
                           credentials={"api_key": "stored"}, secrets={"api_key": SECRET},
                           box=SecretBox(keys=(TEST_SECRET_KEY,)), collection_set_id="set", collection_id=None)
    made = sorted(db.parent.glob("swath.sqlite*"))
    assert [p.name for p in made] == ["swath.sqlite", "swath.sqlite-shm", "swath.sqlite-wal"]
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in made} == {p.name: 0o600 for p in made}
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700  # swath made the folder
    store.close()

    older = tmp_path / "older.sqlite"  # a store file an older swath left readable by all
    older.touch(mode=0o644)
    older.chmod(0o644)
    Store(url=f"sqlite:///{older}").close()
    assert stat.S_IMODE(older.stat().st_mode) == 0o600


def test_the_key_file_must_be_private_regular_and_hold_keys(tmp_path: Path) -> None:
    key_file = tmp_path / "swath.key"
    out = swath_keygen(key_file)
    assert out.exit_code == 0 and stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert load_keys(Config(secret_key_file=str(key_file))) == [key]
    assert swath_keygen(key_file).exit_code == 1  # never overwrites a key
    assert key_file.read_text().strip() == key

    link = tmp_path / "link.key"  # followed (Kubernetes mounts secrets as links), the file it names is checked
    link.symlink_to(key_file)
    assert load_keys(Config(secret_key_file=str(link))) == [key]
    open_link = tmp_path / "open-link.key"
    bad = tmp_path / "bad.key"
    bad.write_text("not-a-key-" + SECRET)
    bad.chmod(0o600)
    open_to_group = tmp_path / "group.key"
    open_to_group.write_text(key)
    open_to_group.chmod(0o640)
    open_link.symlink_to(open_to_group)
    for what, path in [("group-readable", open_to_group), ("link to it", open_link), ("malformed", bad),
                       ("absent", tmp_path / "nope")]:
        with pytest.raises(CredentialKeyInvalid) as refused:
            load_keys(Config(secret_key_file=str(path)))
        assert refused.value.code == codes.CREDENTIAL_KEY_INVALID, what
        assert SECRET not in refused.value.message and key not in refused.value.message, what
        if what == "group-readable":
            assert "0640" in refused.value.message and "chmod 600" in refused.value.message
    with pytest.raises(CredentialKeyInvalid):
        load_keys(Config(secret_key=key, secret_key_file=str(key_file)))  # one place only
    assert key not in repr(Config(secret_key=key))  # a Config in a traceback or log shows no key


def swath_keygen(path: Path):
    from click.testing import CliRunner

    from swath.cli import cli

    return CliRunner().invoke(cli, ["secrets", "keygen", "--file", str(path)])


def test_a_database_error_never_prints_the_values_it_was_writing(db_url: str) -> None:  # noqa: F811
    from sqlalchemy.exc import IntegrityError

    from swath.store.models import Secret

    store = Store(url=db_url)
    box = SecretBox(keys=(TEST_SECRET_KEY,))
    with pytest.raises(IntegrityError) as failed, store.session() as s:
        src = repo.create_source(s, name="x", harvest_type="generic_pages", platform="generic", seeds=[], options={},
                                 credentials={"api_key": "stored"}, secrets={"api_key": SECRET}, box=box,
                                 collection_set_id="set", collection_id=None)
        s.flush()
        sealed = box.seal(SECRET, what="a second copy")[1]
        s.add(Secret(source_id=src.id, name="api_key", scheme="fernet", value=sealed))  # the same key again
        s.flush()
    store.close()
    assert "secrets" in str(failed.value) and sealed not in str(failed.value) and SECRET not in str(failed.value)
