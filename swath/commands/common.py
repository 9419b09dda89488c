"""What every command module shares: `--json`, output, the store and requester of a command, error exits."""

from __future__ import annotations

import functools
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from typing import ParamSpec, Protocol, TextIO, TypeVar

import click
import orjson

from swath.core.config import Config
from swath.core.dataroot import writable_data_root
from swath.core.errors import SwathError
from swath.messages import codes
from swath.requester import Requester
from swath.store import Store

_P = ParamSpec("_P")
_R = TypeVar("_R")

JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")


class Serving(Protocol):
    def serve_forever(self) -> None: ...


_S = TypeVar("_S")


def listening(make: Callable[[], _S], host: str, port: int) -> _S:
    """The server `make` binds, or one line saying why it cannot listen (a port in use) instead of a traceback."""
    try:
        return make()
    except OSError as exc:
        raise SwathError(f"cannot listen on {host}:{port} ({exc.strerror or exc}): give another --port, or stop what "
                         "listens there", code=codes.LISTEN_FAILED) from None


def serve_until_interrupted(server: Serving, where: str) -> None:
    """Say where `server` listens (on stderr, stdout stays the data's), then serve until Ctrl-C, a normal end."""
    click.echo(where, err=True)
    with suppress(KeyboardInterrupt):
        server.serve_forever()


def emit(data: object, as_json: bool, human: str) -> None:
    """Print `data` as JSON for scripts, else the human text."""
    click.echo(orjson.dumps(data, option=orjson.OPT_INDENT_2).decode() if as_json else human)


def config_of(ctx: click.Context) -> Config:
    return ctx.find_object(Config) or Config.from_env()


def open_store(ctx: click.Context) -> Store:
    config = config_of(ctx)
    if config.db_url == f"sqlite:///{config.data_root / 'swath.sqlite'}":  # the default store, in the data root
        writable_data_root(config.data_root)  # a data root that cannot be written: one line saying what to do
    return ctx.with_resource(_closing_store(config))


@contextmanager
def _closing_store(config: Config) -> Iterator[Store]:
    store = Store(url=config.db_url)
    try:
        yield store
    finally:
        store.close()


def open_requester(ctx: click.Context) -> Requester:
    # the one place credentials referenced as env:VAR are read: the command's own environment
    requester = Requester(config=config_of(ctx), store=open_store(ctx), env=dict(os.environ))
    ctx.call_on_close(requester.close)
    return requester


ERROR_LINE_MAX = 1000  # characters of an error line: room for a list of known types, never a screenful


def error_line(code: str, message: str) -> str:
    """`error [code]: message` on one line, capped at ERROR_LINE_MAX."""
    line = f"error [{code}]: {' '.join(message.split())}"
    return line if len(line) <= ERROR_LINE_MAX else line[:ERROR_LINE_MAX - 1] + "…"


def handles_errors(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """RequestError/NotFound/StoreError -> `error [code]: message` (or JSON with --json), exit 1."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return fn(*args, **kwargs)
        except SwathError as exc:
            code, message = exc.code, exc.message
            if kwargs.get("as_json"):
                click.echo(orjson.dumps({"error": {"code": code, "message": message}}).decode())
            else:
                click.echo(error_line(code, message), err=True)
            sys.exit(1)

    return wrapper


class ProgressLine:
    """Progress for people on stderr: one rewritten line on a terminal; in a log (a file or pipe) a line every
    `every` seconds. `close()` prints the last one if it was held back, so a log ends with where it got to."""

    def __init__(self, err: TextIO, *, every: float = 10.0) -> None:
        self.err, self.every = err, every
        self.tty = hasattr(err, "isatty") and err.isatty()
        self._printed = -every
        self._held: str | None = None

    def __call__(self, text: str) -> None:
        if self.tty:
            self.err.write("\r" + text[:200].ljust(80))
        elif time.monotonic() - self._printed >= self.every:
            self._printed, self._held = time.monotonic(), None
            self.err.write(text + "\n")
        else:
            self._held = text
            return
        self.err.flush()

    def close(self) -> None:
        if self.tty:
            self.err.write("\n")
        elif self._held is not None:
            self.err.write(self._held + "\n")
        self._held = None
        self.err.flush()
