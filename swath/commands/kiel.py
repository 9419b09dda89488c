"""`swath kiel check-branches FILE`: the Kiel paper's check_branches script."""

from __future__ import annotations

from pathlib import Path

import click

from swath.harvesters.kiel.branches import BadBranches, load_branches
from swath.messages import codes


@click.group(name="kiel")
def command() -> None:
    """Kiel archiving protocol for AMF records and their objects (the kiel_archive harvest type)."""


@command.command("check-branches")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
def check_branches(file: Path) -> None:
    """Check that every <branch xpath="..."> in FILE is a valid XPath relative to /amf/text."""
    try:
        branches = load_branches(file)
    except BadBranches as exc:
        for problem in exc.problems:
            click.echo(f"error [{codes.KIEL_BAD_BRANCHES}]: {problem}", err=True)
        raise SystemExit(1) from None
    for xpath in branches.xpaths:
        click.echo(f"ok: /amf/text/{xpath}")
