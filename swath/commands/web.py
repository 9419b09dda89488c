"""`swath web`: serve the web application (docs/web.md); `swath web adduser`: make an account (the first admin)."""

from __future__ import annotations

import getpass
import sys

import click

from swath.commands.common import JSON_OPTION, config_of, emit, handles_errors, open_store
from swath.core.config import Config
from swath.core.dataroot import writable_data_root
from swath.core.errors import SwathError
from swath.core.weburl import DEFAULT_WEB_URL, web_link, web_prefix
from swath.messages import codes


@click.group(name="web", invoke_without_command=True)
@click.option("--host", default="127.0.0.1", show_default=True, envvar="SWATH_WEB_HOST",
              help="Address to listen on (SWATH_WEB_HOST; 0.0.0.0 in a container, behind a TLS proxy).")
@click.option("--port", default=8000, show_default=True, type=int, envvar="SWATH_WEB_PORT", help="SWATH_WEB_PORT.")
@click.option("--secure-cookies", type=click.Choice(["auto", "yes", "no"]), default="auto", show_default=True,
              envvar="SWATH_WEB_SECURE_COOKIES",
              help="Mark cookies Secure: auto = when the request came over https (or X-Forwarded-Proto: https from "
                   "a proxy listed in --forwarded-allow-ips). SWATH_WEB_SECURE_COOKIES.")
@click.option("--forwarded-allow-ips", default="127.0.0.1", show_default=True, envvar="SWATH_WEB_FORWARDED_ALLOW_IPS",
              help="Proxies trusted for X-Forwarded-Proto/For (SWATH_WEB_FORWARDED_ALLOW_IPS).")
@click.option("--management-url", envvar="SWATH_RABBITMQ_MANAGEMENT_URL", default=None,
              help="RabbitMQ management API for the Operations page (else passive declares).")
@click.pass_context
@handles_errors
def command(ctx: click.Context, host: str, port: int, secure_cookies: str, forwarded_allow_ips: str,
            management_url: str | None) -> None:
    """Serve the web application: collection sets, collections, runs, exports, operations, accounts.

    Create the first account with `swath web adduser --admin --group GROUP NAME`. With no SWATH_SECRET_KEY or
    SWATH_SECRET_KEY_FILE, the key for stored credentials is <data root>/.swath/secret.key, made on first use."""
    if ctx.invoked_subcommand is not None:
        return  # the subcommand says the key itself: `swath web adduser --help` makes no key
    _say_key(config_of(ctx))
    import uvicorn

    from swath.web.app import create_app

    config = config_of(ctx)
    app = create_app(config=config, store=open_store(ctx), management_url=management_url,
                     secure_cookies={"auto": None, "yes": True, "no": False}[secure_cookies])
    click.echo(f"swath web listening on http://{host}:{port}/; its links: {config.web_url}/ (SWATH_WEB_URL)", err=True)
    if config.web_url == DEFAULT_WEB_URL and port != 8000:  # mails and the CLI would link to another port
        click.echo("swath: set SWATH_WEB_URL to the address people open (for the monitor too): links in mails and "
                   "in the CLI's lines are built on it", err=True)
    # under a prefix, the proxy passes /prefix/x on as /x and the app makes its links with /prefix (root_path)
    uvicorn.run(app, host=host, port=port, proxy_headers=True, forwarded_allow_ips=forwarded_allow_ips,
                server_header=False, log_level="warning", root_path=web_prefix(config.web_url))


@command.command()
@click.argument("name")
@click.option("--admin", is_flag=True, help="An admin: sees every collection set, validates collections, "
              "manages accounts.")
@click.option("--group", "groups", multiple=True, help="A group to join (created when missing); repeatable.")
@JSON_OPTION
@click.pass_context
@handles_errors
def adduser(ctx: click.Context, name: str, admin: bool, groups: tuple[str, ...], as_json: bool) -> None:
    """Create the account NAME; the password is prompted for (twice, hidden) or read as one line from stdin."""
    from swath.web.auth import add_user

    _say_key(config_of(ctx))
    password = _password()
    user = add_user(open_store(ctx), name=name, password=password, is_admin=admin, groups=list(groups))
    emit({"id": user.id, "name": user.name, "admin": user.is_admin, "groups": list(groups)}, as_json,
         f"user {user.name} created" + (" (admin)" if user.is_admin else "")
         + (f" in {', '.join(groups)}" if groups else "") + f"; log in at {web_link(config_of(ctx).web_url, '/login')}")


def _say_key(config: Config) -> None:
    """Make the data root's key on a first run (no key configured) and say where it is."""
    from swath.store.secrets import ensure_key

    if not (config.secret_key or config.secret_key_file):  # the key goes into the data root: one line if it cannot
        writable_data_root(config.data_root)
    found = ensure_key(config)
    if found is not None:
        path, made = found
        click.echo(f"swath: {'made' if made else 'using'} the key for credentials stored from the web: {path} "
                   "(mode 0600; back it up with the database: without it they cannot be read)", err=True)


def _password() -> str:
    if sys.stdin.isatty():
        first = getpass.getpass("Password (at least 10 characters, not shown): ")
        if getpass.getpass("Again: ") != first:
            raise SwathError("the two passwords differ", code=codes.BAD_REQUEST)
        return first
    value = sys.stdin.readline(4096).rstrip("\r\n")
    if not value:
        raise SwathError("no password: type it at the prompt, or give it as one line on stdin", code=codes.BAD_REQUEST)
    return value
