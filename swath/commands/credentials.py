"""`--credential` / `--credential-file` for commands that take credentials: values from a prompt, a file or
the environment, so none has to be on the command line (where `ps` and the shell history show it)."""

from __future__ import annotations

import getpass
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO, TypeVar

import click

from swath.messages import codes
from swath.messages.settings import placeholders
from swath.requester import ENV_PREFIX, RequestError, check_credential_name

MAX_VALUE_BYTES = 64 * 1024  # a credential file larger than this is a mistake (or /dev/zero), not a key

_Command = TypeVar("_Command", bound=Callable[..., object])  # a click command function, options added

CREDENTIAL_HELP = (
    "A credential, repeatable. NAME alone or NAME=- prompts for the value (hidden; read as one line from stdin "
    "when stdin is not a terminal); NAME=@FILE reads it from FILE (one trailing newline dropped; "
    "@/dev/stdin and @<(pass show x) work); NAME=env:VAR stores a reference and reads VAR when the harvest is "
    "launched. NAME=VALUE still works but puts the value in the process list and shell history, so it warns. "
    "Values are stored encrypted (needs SWATH_SECRET_KEY or SWATH_SECRET_KEY_FILE; `swath secrets keygen`) "
    "and never printed.")


def credential_options(fn: _Command) -> _Command:
    """Add `--credential` (to `credentials`) and `--credential-file` (to `credential_files`)."""
    fn = click.option("--credential-file", "credential_files", multiple=True, metavar="NAME=PATH",
                      help="Read credential NAME's value from the file PATH (same as --credential NAME=@PATH).")(fn)
    return click.option("--credential", "credentials", multiple=True,
                        metavar="NAME|NAME=-|NAME=@FILE|NAME=env:VAR", help=CREDENTIAL_HELP)(fn)


def read_credentials(pairs: Iterable[str], files: Iterable[str], *, stdin: TextIO | None = None,
                     before_reading: Callable[[str], None] = lambda name: None) -> tuple[list[str], dict[str, str]]:
    """(NAME=env:VAR references, name -> value read) from the options; `before_reading(name)` runs before a
    value is prompted for or read, so a missing key is said before anyone types a secret."""
    stdin = stdin or sys.stdin
    refs: list[str] = []
    values: dict[str, str] = {}
    seen: set[str] = set()
    wanted: list[tuple[str, str]] = []  # (name, "-" or "@path"), read after every option was checked
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if name in seen:
            raise RequestError(f"credential {check_credential_name(name)!r} is given twice", code=codes.BAD_REQUEST)
        seen.add(check_credential_name(name))
        if not sep or value == "-" or value.startswith("@"):
            wanted.append((name, value or "-"))
        elif value.startswith(ENV_PREFIX):
            refs.append(pair)
        elif not value:
            raise RequestError(f"credential {name!r} has an empty value", code=codes.BAD_REQUEST)
        else:
            click.echo(f"warning: --credential {name}=VALUE puts the value in the process list (ps) and the shell "
                       f"history; prefer --credential {name} (prompt), {name}=@FILE or {name}=env:VAR", err=True)
            values[name] = value
    for pair in files:
        name, sep, path = pair.partition("=")
        if not sep or not path:
            raise RequestError("--credential-file is NAME=PATH", code=codes.BAD_REQUEST)
        if name in seen:
            raise RequestError(f"credential {check_credential_name(name)!r} is given twice", code=codes.BAD_REQUEST)
        seen.add(check_credential_name(name))
        wanted.append((name, "@" + path))
    for number, (name, source) in enumerate(wanted, 1):
        before_reading(name)
        values[name] = _prompt(name, number, stdin) if source == "-" else _from_file(name, Path(source[1:]))
    if unfilled := placeholders(values):  # refused now, not at every launch of the source
        raise RequestError(f"credential {', '.join(map(repr, unfilled))} is the YOUR_<NAME> placeholder of `swath "
                           "harvest example`: give the real value", code=codes.CREDENTIAL_PLACEHOLDER)
    return refs, values


def _prompt(name: str, number: int, stdin: TextIO) -> str:
    if stdin.isatty():
        value = getpass.getpass(f"Value of credential {name} (not shown): ")
    else:
        value = stdin.readline(MAX_VALUE_BYTES + 1).rstrip("\r\n")
    if not value:
        # a bare --credential X may be a value typed without its name: errors count, never quote it
        raise RequestError(f"credential number {number} to be read got no value (stdin is not a terminal and "
                           "had no line for it)", code=codes.BAD_REQUEST)
    return value


def _from_file(name: str, path: Path) -> str:
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_VALUE_BYTES + 1)
    except OSError as exc:
        raise RequestError(f"credential {name!r}: cannot read {path} ({exc.strerror})",
                           code=codes.BAD_REQUEST) from None
    if len(data) > MAX_VALUE_BYTES:
        raise RequestError(f"credential {name!r}: {path} is larger than {MAX_VALUE_BYTES} bytes",
                           code=codes.BAD_REQUEST)
    try:
        value = data.decode("utf-8").removesuffix("\n").removesuffix("\r")
    except UnicodeDecodeError:
        raise RequestError(f"credential {name!r}: {path} is not UTF-8 text", code=codes.BAD_REQUEST) from None
    if not value:
        raise RequestError(f"credential {name!r}: {path} is empty", code=codes.BAD_REQUEST)
    return value
