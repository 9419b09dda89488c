"""`swath wacz COLLECTION_PATH -o OUT.wacz`: package a collection's WARCs as WACZ (exporters/wacz.py)."""

from __future__ import annotations

from pathlib import Path

import click

from swath.commands.common import JSON_OPTION, config_of, emit, handles_errors, open_store
from swath.core.dataroot import cannot_write
from swath.core.errors import SwathError
from swath.core.paths import stays_inside
from swath.exporters.wacz import collection_warcs, package
from swath.messages import codes


@click.command(name="wacz")
@click.argument("collection_path", required=False, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--collection", "collection_id", metavar="ID",
              help="Package the collection's WARCs as the WARC index in the store names them (local files, or "
                   "objects in SWATH_STORAGE_URL read by ranged GETs) instead of a folder's.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="The .wacz file to write (replaced if it exists).")
@click.option("--harvest", "harvest_ids", multiple=True, metavar="ID",
              help="Only this harvest's WARCs (repeat for several); default: every WARC under the path.")
@click.option("--title", default=None, help="Title shown by ReplayWeb.page (default: the folder's name).")
@click.option("--description", default="", help="Description in datapackage.json.")
@JSON_OPTION
@click.pass_context
@handles_errors
def command(ctx: click.Context, collection_path: Path | None, collection_id: str | None, output: Path,
            harvest_ids: tuple[str, ...], title: str | None, description: str, as_json: bool) -> None:
    """Package the WARCs under COLLECTION_PATH (or of --collection ID, from the WARC index) as a WACZ (WARCs,
    CDXJ index, pages list) that ReplayWeb.page and pywb open. A WARC that is a link leading out of the data root
    (or, for a folder outside it, out of the folder) is skipped and named on stderr."""
    if (collection_path is None) == (collection_id is None):
        raise click.UsageError("give a COLLECTION_PATH or --collection ID (one of them)")
    if (why := cannot_write(output.parent)) is not None:  # said before any WARC is read, not as a traceback after
        raise SwathError(f"cannot write {output} ({why}): give -o a file in a folder you may write",
                         code=codes.WACZ_FAILED)
    if collection_id is not None:
        _indexed(ctx, collection_id, output, harvest_ids, title, description, as_json)
        return
    assert collection_path is not None
    data_root = config_of(ctx).data_root
    root = data_root if stays_inside(data_root, collection_path) else collection_path
    found = collection_warcs(collection_path, harvest_ids=harvest_ids, root=root)
    for skipped in found.outside:
        click.echo(f"warning [{codes.PATH_OUTSIDE_DATA_ROOT}] {skipped} leads outside {root}; not packaged", err=True)
    done = package(found.warcs, output, title=title or collection_path.resolve().name, description=description)
    emit({"path": str(done.path), "warcs": done.warcs, "pages": done.pages,
          "skipped_outside": [str(p) for p in found.outside]}, as_json,
         f"{done.path}: {done.warcs} WARC file(s), {done.pages} page(s)"
         + (f", {len(found.outside)} link(s) leading outside skipped" if found.outside else ""))


def _indexed(ctx: click.Context, collection_id: str, output: Path, harvest_ids: tuple[str, ...], title: str | None,
             description: str, as_json: bool) -> None:
    from swath.core.warc_files import use_storage
    from swath.export_index import indexed_warcs
    from swath.harvesters.retry import storage_retry

    config = config_of(ctx)
    use_storage(config, retry=storage_retry(config))
    warcs, refused = indexed_warcs(config, open_store(ctx), collection_id, harvest_ids=harvest_ids)
    for code, message in refused:
        click.echo(f"warning [{code}] {message}", err=True)
    if not warcs and not refused:  # the index is the monitor's: without it, the folder is the way
        raise SwathError(f"the WARC index holds no WARC of collection {collection_id!r} (`swath monitor` records "
                         "them from warc_created); give the collection's folder instead: swath wacz "
                         f"{config.harvest_base}/collections/<set>/{collection_id} -o {output}",
                         code=codes.WACZ_FAILED)
    done = package(warcs, output, title=title or collection_id, description=description)
    emit({"path": str(done.path), "warcs": done.warcs, "pages": done.pages,
          "refused": [message for _, message in refused]}, as_json,
         f"{done.path}: {done.warcs} WARC file(s), {done.pages} page(s)"
         + (f", {len(refused)} refused" if refused else ""))
