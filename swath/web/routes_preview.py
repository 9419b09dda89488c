"""Preview (udata's dry run): a collection whose harvest type has a `dryrun` option is run here, in this
process, with `dryrun` set: the endpoint is listed and mapped, nothing is written (no WARC, no state), and the
page shows what the run would harvest: its counts, messages, and its first items (the dry run's dry_run_item
infos: id, title, date and URL, as the dataset export's columns).

Limits (docs/security.md "The web application"): the page answers within `web_preview_seconds`; the run is
stopped STOP_BEFORE seconds before that and every HTTP exchange of it is cut at that many seconds (its
transport deadline), so a remote dripping bytes cannot hold it; runs go to a pool of `web_preview_slots`
threads (more previews at once: 429 web_busy). A response the run could not parse is named by its code,
never shown: a member must not read an internal service's answers through the preview."""

from __future__ import annotations

import dataclasses
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
from swath.store.repo import NotFound
from swath.web.slots import Slots
from swath.web.views import Ctx, action, page

STOP_BEFORE = 0.2  # the run is stopped this share of the limit before the page answers, to report what it found
PREVIEWS = ".swath/previews"  # inside the data root; the preview's folder is removed after it ran


def previewable(harvest_type: str) -> bool:
    found = settings.declaration(harvest_type)
    return bool(found and "dryrun" in found[0].options.get("properties", {}))


def run_preview(ctx: Ctx, source_id: str) -> dict[str, Any]:
    """The dry run's final status (or the last one sent before it was cut)."""
    from swath.harvesters.registry import lookup

    requester = ctx.web.requester
    with ctx.store.session() as s:
        src, _cs = web_repo.get_collection(s, ctx.user, source_id)
    if not previewable(src.harvest_type):
        raise SwathError(f"{src.harvest_type} has no dry run", code=codes.BAD_REQUEST)
    preview_id = f"preview-{repo.new_id()}"
    body = requester.harvest_start(src, preview_id)
    body["options"] = {**body["options"], "dryrun": True}
    body["path"] = f"{PREVIEWS}/{preview_id}"
    seconds = ctx.web.config.web_preview_seconds
    # every exchange ends within the limit and is not retried: the run is over soon after the page answered
    config = dataclasses.replace(ctx.web.config, http_deadline=min(ctx.web.config.http_deadline, seconds),
                                 http_retries=0)
    statuses: list[dict[str, Any]] = []
    run = _Run(JobContext(config=config, service=lookup(src.harvest_type).load().service,
                          publish=lambda key, message: statuses.append(message) if "status" in message else None),
               body=body, routing_key=requester.start_routing_key(src))
    run.start(ctx.web.previews)
    if not run.done.wait(seconds * (1 - STOP_BEFORE)):
        run.ctx.stop.set()
        run.done.wait(seconds * STOP_BEFORE)
    if not run.done.is_set():  # still in an exchange: answer now with what it sent; the deadline ends it
        last: dict[str, Any] = dict(statuses[-1]) if statuses else {"status": "completed failure", "stats": {}}
        last["errors"] = [*(last.get("errors") or []), {"code": codes.WEB_PREVIEW_DEADLINE, "message":
                          f"the preview took longer than {seconds:g} s and was cut (SWATH_WEB_PREVIEW_SECONDS)"}]
        return last
    if run.failed is not None:
        raise run.failed
    return statuses[-1] if statuses else {"status": "completed failure", "errors": [], "stats": {}}


class _Run:
    """One dry run on its own thread, holding a preview slot until it ends (after the page answered, maybe)."""

    def __init__(self, ctx: JobContext, *, body: dict[str, Any], routing_key: str) -> None:
        self.ctx, self.body, self.routing_key = ctx, body, routing_key
        self.done = threading.Event()
        self.failed: BaseException | None = None

    def start(self, slots: Slots) -> None:
        slots.acquire()  # Busy (429) when every preview slot is taken
        threading.Thread(target=self._run, args=(slots,), name="swath-preview", daemon=True).start()

    def _run(self, slots: Slots) -> None:
        from swath.harvesters.coordination import LocalFiles
        from swath.harvesters.run import run_harvest

        try:  # a preview's files are this process's and thrown away: its claim and state stay beside them
            run_harvest(self.body, routing_key=self.routing_key, ctx=self.ctx,
                        coordination=LocalFiles(self.ctx.config.data_root))
        except BaseException as exc:  # handed to the page, which shows it as any endpoint's error
            self.failed = exc
        finally:
            shutil.rmtree(harvest_path(self.ctx.config, self.body["path"]), ignore_errors=True)
            slots.release()
            self.done.set()


@action
def preview(ctx: Ctx) -> Response:
    """Runs the preview, then sends the browser to its result (Post/Redirect/Get: a reload shows the result
    again, it does not run the preview again)."""
    source_id = ctx.request.path_params["source_id"]
    status = run_preview(ctx, source_id)
    with ctx.store.session() as s:
        src, _cs = web_repo.get_collection(s, ctx.user, source_id)
        web_repo.log_change(s, set_id=src.collection_set_id, source_id=src.id, user=ctx.user.name,
                            action="previewed", detail=status.get("status", ""))
    items, status["infos"] = first_items(status.get("infos") or [])
    for kind in ("errors", "warnings", "infos"):
        status[kind] = [shown(note) for note in status.get(kind) or []]
    token = ctx.web.preview_results.put({"user": ctx.user.id, "source": source_id, "outcome": status,
                                         "items": items})
    return ctx.redirect(f"/collections/{source_id}/preview/{token}")


@page
def preview_result(ctx: Ctx) -> Response:
    """A preview's result, for the user who ran it (anyone else, or after it expired: 404)."""
    source_id = ctx.request.path_params["source_id"]
    kept = ctx.web.preview_results.get(ctx.request.path_params["token"])
    if kept is None or kept["user"] != ctx.user.id or kept["source"] != source_id:
        raise NotFound("this preview's result is no longer kept (results are kept for 30 minutes): run the "
                       "preview again from the collection's page")
    with ctx.store.session() as s:
        src, cs = web_repo.get_collection(s, ctx.user, source_id)
    return ctx.render("preview.html", src=src, cs=cs, outcome=kept["outcome"], items=kept["items"],
                      seconds=int(ctx.web.config.web_preview_seconds))


def shown(note: dict[str, Any]) -> dict[str, Any]:
    """A note as the page shows it: a response that could not be parsed by its code only, since the parser's
    message may quote the response (the remote may be an internal service the member cannot read)."""
    if note.get("code") == codes.BAD_RESPONSE:
        return {**note, "message": "the endpoint's answer could not be read as this harvest type expects "
                "(its content is not shown); check the collection's URL"}
    return note


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


ROUTES = [Route("/collections/{source_id}/preview", preview, methods=["POST"]),
          Route("/collections/{source_id}/preview/{token}", preview_result, methods=["GET"])]
