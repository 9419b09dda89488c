"""A run (harvest job): its page, and the live part the page polls (static/live.js) until the run ends."""

from __future__ import annotations

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swath.shared.records import job_dict
from swath.store import repo, web_repo
from swath.store.models import ACTIVE_STATES, Job, Source, Warc
from swath.web.views import Ctx, page


def _job(ctx: Ctx) -> tuple[Job, Source | None, list[Warc]]:
    with ctx.store.session() as s:
        job = repo.get_job(s, ctx.request.path_params["job_id"])
        if job.source_id is None:  # launched elsewhere: no collection to check membership against
            if not ctx.user.is_admin:
                raise repo.NotFound("no such run")
            src = None
        else:
            src, _cs = web_repo.get_collection(s, ctx.user, job.source_id)
        warcs = repo.warcs_of(s, [job.id])[job.id]
    return job, src, warcs


@page
def show_run(ctx: Ctx) -> Response:
    job, src, warcs = _job(ctx)
    return ctx.render("run.html", job=job, src=src, warcs=warcs, live=job.status in ACTIVE_STATES)


@page
def live_run(ctx: Ctx) -> Response:
    """The part of the run page that changes, as HTML; `X-Swath-Final: 1` tells the page to stop polling."""
    job, src, warcs = _job(ctx)
    response = ctx.render("run_live.html", job=job, src=src, warcs=warcs, notice=None)  # the flash is the page's
    response.headers["X-Swath-Final"] = "0" if job.status in ACTIVE_STATES else "1"
    return response


@page
def run_json(ctx: Ctx) -> Response:
    job, _src, warcs = _job(ctx)
    return JSONResponse(job_dict(job, warcs))


ROUTES = [  # the .json route first: "/runs/{job_id}" would match "x.json" as the id "x.json"
    Route("/runs/{job_id}.json", run_json, methods=["GET"]),
    Route("/runs/{job_id}", show_run, methods=["GET"]),
    Route("/runs/{job_id}/live", live_run, methods=["GET"]),
]
