"""`swath metashare`: run a META-SHARE node over an LR storage directory, and add LRs to one."""

from __future__ import annotations

import ssl
from pathlib import Path

import click

from swath.commands.common import listening, serve_until_interrupted
from swath.platforms.metashare.public import MetashareError, add_lrs, check_lr_files, open_node


def read_users(path: Path) -> dict[str, str]:
    """`name:password` per line; blank lines and lines starting with # are skipped."""
    users: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        name, sep, password = line.partition(":")
        if not sep or not name or not password:
            # The line itself may hold a password, so only its number is shown.
            raise click.BadParameter(f"line {number} is not name:password", param_hint="--users")
        users[name] = password
    if not users:
        raise click.BadParameter(f"{path} names no users", param_hint="--users")
    return users


@click.group(name="metashare")
def command() -> None:
    """META-SHARE Harvesting Protocol v1.0 node (the sync client is the metashare_sync harvest type)."""


@command.command()
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option("--users", "users_file", required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="File of name:password lines: the accounts allowed to sync.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--public-url", default=None, help="Base URL written as source_url of LRs first served here.")
@click.option("--certfile", type=click.Path(dir_okay=False, exists=True), help="Serve HTTPS with this certificate.")
@click.option("--keyfile", type=click.Path(dir_okay=False, exists=True), help="Private key for --certfile.")
def serve(directory: Path, users_file: Path, host: str, port: int, public_url: str | None,
          certfile: str | None, keyfile: str | None) -> None:
    """Serve the LRs in DIRECTORY (one <storage id>/metadata.xml per LR) to other nodes."""
    tls = None
    if certfile:
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(certfile, keyfile)
    users = read_users(users_file)
    node = listening(lambda: open_node(directory=directory, users=users, host=host, port=port, public_url=public_url,
                                       tls=tls), host, port)
    serve_until_interrupted(node, f"serving {directory} at {node.url} (source_url {node.public_url})")


@command.command(name="import")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path))
@click.option("--source-url", required=True, help="Base URL of this node, written as the LRs' source_url.")
def import_(directory: Path, files: tuple[Path, ...], source_url: str) -> None:
    """Add metadata XML FILES to DIRECTORY as new LRs; prints one storage id per file."""
    try:
        check_lr_files(files)  # every file before any is added
    except MetashareError as exc:
        raise click.ClickException(exc.message) from None
    for identifier, path in add_lrs(directory, files, source_url=source_url):
        click.echo(f"{identifier}\t{path}")
