"""Preview (udata's dry run): a collection whose harvest type has a `dryrun` option is run here, in this
process, with `dryrun` set: the endpoint is listed and mapped, nothing is written (no WARC, no state), and the
page shows what the run would harvest: its counts, messages, and its first items (the dry run's dry_run_item
infos: id, title, date and URL, as the dataset export's columns). It runs for at most PREVIEW_SECONDS, then is
stopped."""

from __future__ import annotations

import shutil
import threading
from typing import Any
from urllib.parse import urlsplit

import orjson
from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.core.jobs import JobContext
from swath.core.paths import harvest_path
from swath.messages import codes, settings
from swath.store import repo, web_repo
from swath.web.views import Ctx, action

PREVIEW_SECONDS = 60.0
PREVIEWS = ".swath/previews"  # inside the data root; the preview's folder is removed after it ran


def previewable(harvest_type: str) -> bool:
    found = settings.declaration(harvest_type)
    return bool(found and "dryrun" in found[0].options.get("properties", {}))


def run_preview(ctx: Ctx, source_id: str) -> dict[str, Any]:
    """The dry run's final status (or the last one sent before it was stopped)."""
    from swath.harvesters.registry import lookup
    from swath.harvesters.run import run_harvest

    requester = ctx.web.requester
    with ctx.store.session() as s:
        src, _cs = web_repo.get_collection(s, ctx.user, source_id)
    if not previewable(src.harvest_type):
        raise SwathError(f"{src.harvest_type} has no dry run", code=codes.BAD_REQUEST)
    preview_id = f"preview-{repo.new_id()}"
    body = requester.harvest_start(src, preview_id)
    body["options"] = {**body["options"], "dryrun": True}
    body["path"] = f"{PREVIEWS}/{preview_id}"
    statuses: list[dict[str, Any]] = []
    stop = threading.Event()
    timer = threading.Timer(PREVIEW_SECONDS, stop.set)
    job_ctx = JobContext(config=ctx.web.config, service=lookup(src.harvest_type).load().service, stop=stop,
                         publish=lambda key, message: statuses.append(message) if "status" in message else None)
    timer.start()
    try:
        run_harvest(body, routing_key=requester.start_routing_key(src), ctx=job_ctx)
    finally:
        timer.cancel()
        shutil.rmtree(harvest_path(ctx.web.config, body["path"]), ignore_errors=True)
    return statuses[-1] if statuses else {"status": "completed failure", "errors": [], "stats": {}}


@action
def preview(ctx: Ctx) -> Response:
    source_id = ctx.request.path_params["source_id"]
    status = run_preview(ctx, source_id)
    with ctx.store.session() as s:
        src, cs = web_repo.get_collection(s, ctx.user, source_id)
        web_repo.log_change(s, set_id=src.collection_set_id, source_id=src.id, user=ctx.user.name,
                            action="previewed", detail=status.get("status", ""))
    items, status["infos"] = first_items(status.get("infos") or [])
    return ctx.render("preview.html", src=src, cs=cs, outcome=status, items=items, seconds=int(PREVIEW_SECONDS))


def first_items(infos: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the items the dry run named in dry_run_item infos, the other infos). A URL is kept only when it is
    http(s): the page links it, and it came from the remote."""
    items, others = [], []
    for note in infos:
        if note.get("code") != codes.DRY_RUN_ITEM:
            others.append(note)
            continue
        try:
            item = orjson.loads(note.get("message") or "")
        except orjson.JSONDecodeError:
            others.append(note)
            continue
        if isinstance(item, dict):
            url = item.get("url")
            item["url"] = url if isinstance(url, str) and urlsplit(url).scheme in ("http", "https") else None
            items.append(item)
    return items, others


ROUTES = [Route("/collections/{source_id}/preview", preview, methods=["POST"])]
