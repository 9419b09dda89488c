"""Collections (harvest sources): the form generated from the harvest type, create, show, seeds, options,
validation, schedule, start/stop/cancel, deactivate. Every change goes through the requester and
swath/source_settings.py, as the CLI's do, and into the set's change history."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from sqlalchemy.orm import Session
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from swath import source_settings
from swath.core.errors import SwathError
from swath.exporters.writers import FORMATS
from swath.messages import codes
from swath.requester import STORED as STORED_MARK
from swath.requester import Requester
from swath.source_settings import SettingsRefused
from swath.store import repo, web_repo
from swath.store.models import ACCEPTED, Job, Source
from swath.web import fields, forms, routes_credentials
from swath.web.views import Ctx, action, admin_only, page


def _form_page(ctx: Ctx, set_id: str, harvest_type: str, *, error: str | None = None, status: int = 200,
               errors: dict[str, str] | None = None) -> Response:
    """The new-collection form; refused, with what was typed and each field's refusal beside it (`errors`)."""
    info = forms.type_info(harvest_type)
    values: Mapping[str, object] = ctx.form or {}
    errors = dict(errors or {})
    beside = {f"opt.{name}" for name in forms.option_names(harvest_type)} | {"seeds", "credentials"}
    elsewhere = [errors.pop(k) for k in list(errors) if k not in beside]
    if errors:
        error = " ".join(["The settings marked below were refused.", *elsewhere])
    with ctx.store.session() as s:
        cs = web_repo.get_set(s, ctx.user, set_id)
        reusable = [c for c in web_repo.collections_of(s, cs.id) if c.credentials and c.deleted_at is None
                    and forms.type_info(c.harvest_type).credentials == info.credentials]
        shared = routes_credentials.usable(s, harvest_type, cs.group_id) if info.credentials else []
    return ctx.render("collection_new.html", status=status, cs=cs, info=info, error=error, values=values,
                      errors=errors,
                      fields=forms.option_fields(harvest_type, forms.typed_values(harvest_type, values), errors),
                      credentials=forms.credential_names(info), reusable=reusable, shared_usable=shared)


@page
def new_collection(ctx: Ctx) -> Response:
    harvest_type = ctx.request.query_params.get("type", "")
    return _form_page(ctx, ctx.request.path_params["set_id"], harvest_type)


@action
def create_collection(ctx: Ctx) -> Response:
    set_id, harvest_type = ctx.request.path_params["set_id"], ctx.field("type")
    info = forms.type_info(harvest_type)
    try:
        with ctx.store.session() as s:
            cs = web_repo.get_set(s, ctx.user, set_id)
            reuse = _reused(ctx, s, cs.id, ctx.field("reuse"))
            if ctx.field("credential"):  # a credential of the group, by reference (another group's: a 404)
                reuse = [f"{k}={v}" for k, v in routes_credentials.references(s, ctx.field("credential"),
                                                                            cs.id).items()], {}
            name = fields.name(ctx.field("name"))
            if repo.name_taken(s, name, collection_set_id=cs.id):  # names are the group's own, not global
                raise SwathError(f"your group has a collection named {name!r} already (a deactivated one counts "
                                 "too); choose another name", code=codes.BAD_REQUEST)
        seeds, options = forms.read_seeds(ctx.form or {}), forms.read_options(harvest_type, ctx.form or {})
        refs, values = forms.read_credentials(info, ctx.form or {})
        if reuse is not None:
            refs, values = reuse
        typed = ctx.field("collection_id")
        collection_id = fields.folder(typed) if typed else _folder_for(ctx, cs.id, name)
        source_settings.check_source(harvest_type, options=options, seeds=seeds,
                                     credentials=[r.partition("=")[0] for r in refs] + list(values),
                                     collection_ids={"collection id": collection_id})
        src = ctx.web.requester.create_source(name=name, harvest_type=harvest_type, seeds=seeds, options=options,
                                              credentials=refs, secrets=values, collection_set_id=cs.id,
                                              collection_id=collection_id)
    except SwathError as exc:
        if isinstance(exc, repo.NotFound):
            raise
        errors = forms.field_errors(exc.problems) if isinstance(exc, SettingsRefused) else None
        return _form_page(ctx, set_id, harvest_type, error=exc.message, status=400, errors=errors)
    with ctx.store.session() as s:
        web_repo.log_change(s, set_id=cs.id, source_id=src.id, user=ctx.user.name, action="created collection",
                            detail=f"{src.name}: {src.harvest_type}, {len(seeds)} seed(s), options {options}, "
                                   f"credentials {sorted(src.credentials)}")
    return ctx.redirect(f"/collections/{src.id}")


def _folder_for(ctx: Ctx, set_id: str, name: str) -> str | None:
    """A folder name from the collection's name (its people see it under collections/<set>/), unique in the set."""
    base = fields.folder_from(name)
    if not base:
        return None  # the requester's generated id
    with ctx.store.session() as s:
        taken = {c.collection_id for c in web_repo.collections_of(s, set_id)}
    return fields.free_folder(base, taken.__contains__)


def _reused(ctx: Ctx, s: Session, set_id: str, source_id: str) -> tuple[list[str], dict[str, str]] | None:
    """The credentials of another collection of the same group: references as they are, stored values opened
    here and sealed again for the new collection (they never reach the browser)."""
    if not source_id:
        return None
    other, other_set = web_repo.get_collection(s, ctx.user, source_id)
    mine = web_repo.get_set(s, ctx.user, set_id)
    if other_set is None or other_set.group_id != mine.group_id:
        raise repo.NotFound(f"no collection {source_id!r}")
    refs = [f"{k}={v}" for k, v in other.credentials.items() if v != STORED_MARK]
    stored = repo.secrets_of(s, other, ctx.web.requester.secret_box()) if STORED_MARK in other.credentials.values() \
        else {}
    return refs, stored


@page
def show_collection(ctx: Ctx) -> Response:
    source_id = ctx.request.path_params["source_id"]
    from swath.web.routes_exports import export_types_for
    from swath.web.routes_preview import previewable
    from swath.web.routes_stats import collection_view

    with ctx.store.session() as s:
        src, cs = web_repo.get_collection(s, ctx.user, source_id)
        jobs = repo.list_jobs(s, source_id=src.id, limit=30)
        active = repo.active_job(s, src.id)
        history = web_repo.changes(s, set_id=src.collection_set_id, source_id=src.id)
        exports = web_repo.export_requests(s, ctx.user, source_id=src.id, limit=20)
        stats = collection_view(s, src, ctx.web.stats)
        shared = routes_credentials.usable(s, src.harvest_type, cs.group_id) if cs else []
    info = forms.type_info(src.harvest_type)
    pages = max(1, -(-len(src.seeds) // SEEDS_PER_PAGE))
    wanted = ctx.request.query_params.get("seeds", "1")
    page_no = min(max(int(wanted), 1), pages) if wanted.isdigit() else 1
    shown = src.seeds[(page_no - 1) * SEEDS_PER_PAGE:page_no * SEEDS_PER_PAGE]
    return ctx.render("collection.html", src=src, cs=cs, jobs=jobs, active=active, history=history, info=info,
                      shown_seeds=shown, seed_page=page_no, seed_pages=pages, seeds_per_page=SEEDS_PER_PAGE,
                      exports=exports, fields=forms.option_fields(src.harvest_type, src.options),
                      stats=stats,
                      export_types=export_types_for(src), formats=list(FORMATS),
                      previewable=previewable(src.harvest_type), shared_usable=shared,
                      shared_names={c.id: c.name for c in shared})


SEEDS_PER_PAGE = 100  # a 3,000-seed collection's page stays small; more seeds to pick by uid go in a text box


def _collection(ctx: Ctx) -> Source:
    """The collection of the URL, if the user may see it."""
    with ctx.store.session() as s:
        src, _cs = web_repo.get_collection(s, ctx.user, ctx.request.path_params["source_id"])
    return src


def _done(ctx: Ctx, src: Source, what: str, detail: str = "", then: str | None = None,
          flash: str | None = None) -> Response:
    """Record a change that succeeded in the history, then show the collection (or `then`)."""
    with ctx.store.session() as s:
        web_repo.log_change(s, set_id=src.collection_set_id, source_id=src.id, user=ctx.user.name, action=what,
                            detail=detail)
    return ctx.redirect(then or f"/collections/{src.id}", flash=flash)


@action
def add_seeds(ctx: Ctx) -> Response:
    seeds = forms.read_seeds(ctx.form or {})
    if not seeds:
        raise SwathError("paste at least one seed, one per line", code=codes.BAD_REQUEST)
    src = _collection(ctx)
    with ctx.store.session() as s:
        source_settings.update(s, src.id, seeds=[*src.seeds, *seeds])
    return _done(ctx, src, "added seeds", ", ".join(str(x.get("token") or x.get("uid")) for x in seeds))


@action
def remove_seed(ctx: Ctx) -> Response:
    seed_id, src = ctx.field("seed"), _collection(ctx)
    remaining = [x for x in src.seeds if x.get("id") != seed_id]
    if not remaining:
        raise SwathError("a collection keeps at least one seed; deactivate it instead", code=codes.BAD_REQUEST)
    with ctx.store.session() as s:
        source_settings.update(s, src.id, seeds=remaining)
    gone = next((str(x.get("token") or x.get("uid")) for x in src.seeds if x.get("id") == seed_id), seed_id)
    return _done(ctx, src, "removed seed", gone)


@action
def edit_options(ctx: Ctx) -> Response:
    src = _collection(ctx)
    options = forms.read_options(src.harvest_type, ctx.form or {})
    with ctx.store.session() as s:
        source_settings.update(s, src.id, options=options, unset=[k for k in src.options if k not in options])
    return _done(ctx, src, "changed options", str(options))


@action
def validate(ctx: Ctx) -> Response:
    admin_only(ctx)
    refuse, src = ctx.field("decision") == "refuse", _collection(ctx)
    with ctx.store.session() as s:
        source_settings.validate(s, src.id, refuse=refuse, comment=ctx.field("comment") or None)
    return _done(ctx, src, "refused" if refuse else "accepted", ctx.field("comment"))


@action
def schedule(ctx: Ctx) -> Response:
    kind, expr, src = ctx.field("kind"), ctx.field("expr"), _collection(ctx)
    with ctx.store.session() as s:
        if kind == "none":
            source_settings.unschedule(s, src.id)
        else:
            every = f"{expr}{ctx.field('unit')}" if kind == "every" else None
            source_settings.schedule(s, src.id, every=every, cron=expr if kind == "cron" else None)
    return _done(ctx, src, "schedule", f"{kind} {expr}{ctx.field('unit') if kind == 'every' else ''}".strip())


def _job_action(what: str, act: Callable[[Requester, str], Job]) -> Callable[[Request], Awaitable[Response]]:
    """Start, stop or cancel through the requester, then show the run."""

    def endpoint(ctx: Ctx) -> Response:
        src = _collection(ctx)
        job = act(ctx.web.requester, src.id)
        return _done(ctx, src, what, then=f"/runs/{job.id}", flash=_waiting(ctx.web.requester, job))

    return action(endpoint)


def _waiting(requester: Requester, job: Job) -> str | None:
    """A notice for the run page when a launched job waits in a queue no worker consumes (as `launch` warns)."""
    state = requester.worker_queue(job) if job.status == "queued" else None
    if state is None or state.consumers:
        return None
    return (f"No worker consumes queue {state.queue}: the run waits there until a {state.service} worker starts, "
            "or cancel it.")


start = _job_action("started a harvest", lambda requester, ident: requester.launch(ident))
stop = _job_action("stopped the harvest", lambda requester, ident: requester.stop(ident))
cancel = _job_action("cancelled the queued harvest", lambda requester, ident: requester.cancel(ident).job)


@action
def deactivate(ctx: Ctx) -> Response:
    src = _collection(ctx)
    ask = ctx.confirmed(title=f"Deactivate {src.name}?", button="Deactivate", back=f"/collections/{src.id}",
                        consequence="It stops: no scheduled or manual harvest starts any more (a run going on now "
                        "goes on), its settings are frozen. Its WARCs and exports are kept, and it can be "
                        "reactivated from its page; only an administrator's purge removes it for good.")
    if ask is not None:
        return ask
    with ctx.store.session() as s:
        repo.soft_delete(s, repo.find_source(s, src.id))
    return _done(ctx, src, "deactivated collection", flash=f"{src.name} is deactivated; reactivate it below")


@action
def reactivate(ctx: Ctx) -> Response:
    src = _collection(ctx)
    with ctx.store.session() as s:
        found = repo.find_source(s, src.id, deleted=True)
        found.deleted_at = None
        if found.schedule_kind and found.schedule_expr:  # its schedule resumes from now
            interval = found.schedule_kind == "interval"
            source_settings.schedule(s, src.id, every=found.schedule_expr if interval else None,
                                     cron=None if interval else found.schedule_expr)
    return _done(ctx, src, "reactivated collection", flash=f"{src.name} is active again")


def runnable(src: Source) -> bool:
    return src.validation == ACCEPTED and src.deleted_at is None


ROUTES = [
    Route("/sets/{set_id}/new", new_collection, methods=["GET"]),
    Route("/sets/{set_id}/new", create_collection, methods=["POST"]),
    Route("/collections/{source_id}", show_collection, methods=["GET"]),
    *(Route(f"/collections/{{source_id}}/{name}", fn, methods=["POST"]) for name, fn in (
        ("seeds", add_seeds), ("seeds/remove", remove_seed), ("options", edit_options), ("validate", validate),
        ("schedule", schedule), ("start", start), ("stop", stop), ("cancel", cancel), ("deactivate", deactivate),
        ("reactivate", reactivate))),
]
