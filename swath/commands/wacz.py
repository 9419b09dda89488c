"""`swath wacz COLLECTION_PATH -o OUT.wacz`: package a collection's WARCs as WACZ (exporters/wacz.py)."""

from __future__ import annotations

from pathlib import Path

import click

from swath.commands.common import JSON_OPTION, emit, handles_errors
from swath.exporters.wacz import collection_warcs, package


@click.command(name="wacz")
@click.argument("collection_path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The .wacz file to write (replaced if it exists).")
@click.option("--harvest", "harvest_ids", multiple=True, metavar="ID",
              help="Only this harvest's WARCs (repeat for several); default: every WARC under the path.")
@click.option("--title", default=None, help="Title shown by ReplayWeb.page (default: the folder's name).")
@click.option("--description", default="", help="Description in datapackage.json.")
@JSON_OPTION
@handles_errors
def command(collection_path: Path, output: Path, harvest_ids: tuple[str, ...], title: str | None,
            description: str, as_json: bool) -> None:
    """Package the WARCs under COLLECTION_PATH as a WACZ (WARCs, CDXJ index, pages list) that ReplayWeb.page
    and pywb open."""
    warcs = collection_warcs(collection_path, harvest_ids=harvest_ids)
    done = package(warcs, output, title=title or collection_path.resolve().name, description=description)
    emit({"path": str(done.path), "warcs": done.warcs, "pages": done.pages}, as_json,
         f"{done.path}: {done.warcs} WARC file(s), {done.pages} page(s)")
