"""`swath kiel check-branches FILE` (the Kiel paper's check_branches script) and `swath kiel notes ARCHIVE ID`
(a record's history, from the notes in its record directory)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import click
import orjson

from swath.commands.common import handles_errors
from swath.core.errors import SwathError
from swath.messages import codes
from swath.platforms.kiel.public import REDIST_NAMES, BadBranches, BadNote, branch_xpaths, read_notes, record_directory


@click.group(name="kiel")
def command() -> None:
    """Kiel archiving protocol for AMF records and their objects (the kiel_archive harvest type)."""


@command.command("check-branches")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def check_branches(file: Path) -> None:
    """Check that every <branch xpath="..."> in FILE is a valid XPath relative to /amf/text."""
    try:
        xpaths = branch_xpaths(file)
    except BadBranches as exc:
        for problem in exc.problems:
            click.echo(f"error [{codes.KIEL_BAD_BRANCHES}]: {problem}", err=True)
        raise SystemExit(1) from None
    for xpath in xpaths:
        click.echo(f"ok: /amf/text/{xpath}")


@command.command("notes")
@click.argument("archive", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("record_id")
@click.option("--redist", type=click.Choice(list(REDIST_NAMES)), default="nested", show_default=True,
              help="The redist the archive was harvested with (the kiel_archive option).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per note (with its notes file), as stored.")
@handles_errors
def notes(archive: Path, record_id: str, redist: str, as_json: bool) -> None:
    """List the history of RECORD_ID in the Kiel ARCHIVE (a kiel_archive harvest's path): every note of
    every renewal, oldest first: record versions, object fetches (status, unchanged, redirects, failures),
    objects dropped by a record change and versions deleted by the termination strategy."""
    directory = record_directory(archive, record_id, redist=redist)
    if not directory.is_dir():
        raise SwathError(f"no record directory for {record_id!r} under {archive} (redist {redist}); check the id "
                         "and --redist", code=codes.KIEL_NO_RECORD)
    for path, number, note in read_notes(directory, root=archive):
        if isinstance(note, BadNote):
            click.echo(f"warning [{codes.KIEL_BAD_NOTE}]: {path.name}:{number}: {note}; skipped", err=True)
        elif as_json:
            click.echo(orjson.dumps({**note.as_dict(), "notes_file": path.name}).decode())
        else:
            when = dt.datetime.fromtimestamp(note.tist, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            detail = " ".join(f"{k}={v}" for k, v in note.detail.items())
            click.echo(f"{when}  {note.item:<6}  {note.event:<10} {note.outcome:<13} {note.subject}  {detail}")

