"""`swath secrets keygen|migrate`: the key that encrypts credential values in the store, and re-encrypting."""

from __future__ import annotations

import os
from pathlib import Path

import click

from swath.commands.common import JSON_OPTION, config_of, emit, handles_errors, open_store
from swath.messages import codes
from swath.requester import RequestError
from swath.store import group_credentials, repo
from swath.store.secrets import SecretBox, generate_key


@click.group(name="secrets")
def command() -> None:
    """The key for credential values kept in the store (docs/security.md, "Credentials at rest").

    Values given to `swath harvest create --credential` are stored encrypted with SWATH_SECRET_KEY (or the
    key in the file SWATH_SECRET_KEY_FILE, which must be mode 0600); without a key, storing a value is refused
    and NAME=env:VAR references work as before. Give every process that launches (CLI, scheduler) the key.
    """


@command.command()
@click.option("--file", "path", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the key to this new file (mode 0600) instead of printing it; then set "
                   "SWATH_SECRET_KEY_FILE to it.")
@handles_errors
def keygen(path: Path | None) -> None:
    """Make a new random key (Fernet: 32 bytes, URL-safe base64).

    To rotate keys, set SWATH_SECRET_KEY=NEW,OLD (newest first) and run `swath secrets migrate`.
    """
    key = generate_key()
    if path is None:
        click.echo(key)
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise RequestError(f"cannot create {path} ({exc.strerror}); an existing key file is never overwritten",
                           code=codes.BAD_REQUEST) from None
    with os.fdopen(fd, "w") as fh:
        fh.write(key + "\n")
    click.echo(f"wrote a new key to {path} (mode 0600); set SWATH_SECRET_KEY_FILE={path}", err=True)


@command.command()
@JSON_OPTION
@click.pass_context
@handles_errors
def migrate(ctx: click.Context, as_json: bool) -> None:
    """Encrypt credential values stored in plain text by older versions, and re-encrypt values sealed with an
    older key under the newest (the first in SWATH_SECRET_KEY); then rewrite the store's files so no old copy
    stays on disk. Safe to run again."""
    box = SecretBox.from_config(config_of(ctx))
    box.require("the stored credentials")
    store = open_store(ctx)
    with store.session() as s:
        counts = repo.reseal_secrets(s, box)
        group_credentials.reseal(s, box, counts)  # the web's group credentials too
    store.scrub()
    emit(counts, as_json, f"{counts['encrypted']} encrypted, {counts['rekeyed']} re-encrypted with the newest key, "
                          f"{counts['unchanged']} already current")
