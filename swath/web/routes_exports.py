"""Exports: request one for a collection or some of its seeds (through the requester, as `swath export start`),
follow it, download its files. Files are served only from inside the data root's exports/ folder, each path checked."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from starlette.responses import FileResponse, Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.exporters.writers import FORMATS
from swath.messages import codes
from swath.purge import export_folder
from swath.store import repo, web_repo
from swath.store.models import ACTIVE_STATES, Export, Source
from swath.web.fields import date_time
from swath.web.paging import pager
from swath.web.views import Ctx, action, page

DATES = {"item_date_start": "Items from", "item_date_end": "Items until", "harvest_date_start": "Harvested from",
         "harvest_date_end": "Harvested until"}


def export_types_for(src: Source) -> list[str]:
    """The export types that read this collection's harvest type: its platform's, the same name first."""
    from swath.exporters.registry import export_types, platform_of

    try:
        platform = platform_of(src.harvest_type)
    except LookupError:
        platform = src.platform
    names = [n for n in export_types() if _platform(n, platform_of) == platform]
    return sorted(names, key=lambda n: (n != src.harvest_type, n))


def _platform(name: str, platform_of: object) -> str:
    try:
        return str(platform_of(name))  # type: ignore[operator]
    except LookupError:
        return ""


@action
def request_export(ctx: Ctx) -> Response:
    source_id = ctx.request.path_params["source_id"]
    with ctx.store.session() as s:
        src, _cs = web_repo.get_collection(s, ctx.user, source_id)
    export_type, fmt = ctx.field("type"), ctx.field("format") or "csv"
    if export_type not in export_types_for(src) or fmt not in FORMATS:
        raise SwathError("choose an export type and format from the lists", code=codes.BAD_REQUEST)
    segment = ctx.field("segment_size")
    if segment and not (segment.isdigit() and int(segment) > 0):
        raise SwathError("segment size is a whole number of items above 0 (empty: one file)", code=codes.BAD_REQUEST)
    seeds = chosen_seeds(ctx, src)
    export = ctx.web.requester.start_export(
        export_type=export_type, fmt=fmt, collection_id=None if seeds else src.collection_id, seeds=seeds, path=None,
        dedupe=ctx.field("dedupe") == "on", segment_size=int(segment) if segment else None,
        dates={k: date_time(ctx.field(k), end=k.endswith("_end"), label=label) for k, label in DATES.items()})
    with ctx.store.session() as s:
        web_repo.add_export_request(s, export_id=export.id, set_id=src.collection_set_id, source_id=src.id,
                                    user=ctx.user.name)
        web_repo.log_change(s, set_id=src.collection_set_id, source_id=src.id, user=ctx.user.name,
                            action="requested export", detail=f"{export_type} {fmt} ({export.id})" + (
                                f" of seeds {', '.join(s['uid'] for s in seeds)}" if seeds else ""))
    return ctx.redirect(f"/exports/{export.id}")


def chosen_seeds(ctx: Ctx, src: Source) -> list[dict[str, str]]:
    """The ticked seeds as an export message names them (`swath export start --seed-uid`): id and uid. An
    export of seeds selects items by uid, so a seed without one cannot be chosen."""
    ticked = [v for v in ctx.form.getlist("seed") if isinstance(v, str)] if ctx.form is not None else []
    by_uid = {str(s["uid"]): s["id"] for s in src.seeds if s.get("uid")}
    typed = [line.strip() for line in ctx.field("seed_uid").splitlines() if line.strip()]
    missing = [uid for uid in typed if uid not in by_uid]
    if missing:
        raise SwathError(f"Seed uids: no seed of this collection has the uid {missing[0]!r}", code=codes.BAD_REQUEST)
    ticked += [by_uid[uid] for uid in typed]  # a big collection's seeds are picked by uid in a text box
    seeds = {s["id"]: s for s in src.seeds}
    unknown = [t for t in ticked if t not in seeds or not seeds[t].get("uid")]
    if unknown:
        raise SwathError(f"no seed with a uid {unknown[0]!r} in this collection", code=codes.BAD_REQUEST)
    return [{"id": t, "uid": str(seeds[t]["uid"])} for t in dict.fromkeys(ticked)]


@page
def list_exports(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        pages = pager(ctx.request, "page", web_repo.count_export_requests(s, ctx.user))
        rows = web_repo.export_requests(s, ctx.user, offset=pages.offset, limit=pages.per_page)
        wanted = {r.source_id for _e, r in rows if r.source_id}
        names = {src.id: src.name for src in s.scalars(select(Source).where(Source.id.in_(wanted)))}
    return ctx.render("exports.html", rows=rows, names=names, pages=pages)


def files_of(ctx: Ctx, export: Export) -> list[tuple[str, int]]:
    """(name, bytes) of the finished files in the export's folder; none when it is not inside exports/."""
    folder = _folder(ctx, export)
    if folder is None or not folder.is_dir():
        return []
    return [(p.name, p.stat().st_size) for p in sorted(folder.iterdir())
            if p.is_file() and not p.is_symlink() and not p.name.endswith(".part") and not p.name.startswith(".")]


def _folder(ctx: Ctx, export: Export) -> Path | None:
    return export_folder(ctx.web.config, export.path)


@page
def show_export(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        export, request = web_repo.export_request(s, ctx.user, ctx.request.path_params["export_id"])
        src = s.get(Source, request.source_id) if request.source_id else None
    template = "export_live.html" if ctx.request.url.path.endswith("/live") else "export.html"
    response = ctx.render(template, export=export, request=request, src=src, files=files_of(ctx, export),
                          live=export.status in ACTIVE_STATES, notice=None)
    response.headers["X-Swath-Final"] = "0" if export.status in ACTIVE_STATES else "1"
    return response


@page
def download(ctx: Ctx) -> Response:
    name = ctx.request.path_params["name"]
    with ctx.store.session() as s:
        export, _request = web_repo.export_request(s, ctx.user, ctx.request.path_params["export_id"])
    if name not in {n for n, _size in files_of(ctx, export)}:
        raise repo.NotFound(f"export {export.id} has no file {name!r}")
    folder = _folder(ctx, export)
    assert folder is not None
    return FileResponse(folder / name, filename=name, headers={"X-Content-Type-Options": "nosniff"})


ROUTES = [
    Route("/collections/{source_id}/export", request_export, methods=["POST"]),
    Route("/exports", list_exports, methods=["GET"]),
    Route("/exports/{export_id}", show_export, methods=["GET"]),
    Route("/exports/{export_id}/live", show_export, methods=["GET"]),
    Route("/exports/{export_id}/files/{name}", download, methods=["GET"]),
]
