"""Renaming a collection or a collection set: the new name is checked as a new one is (any characters, unique in
its group), the change goes into the history, and the folder name stays as it is (WARCs and exports keep their
paths)."""

from __future__ import annotations

from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.store import repo, web_repo
from swath.web import fields
from swath.web.views import Ctx, action

KEPT = "the folder {} stays as it is"


@action
def rename_collection(ctx: Ctx) -> Response:
    name = fields.name(ctx.field("name"))
    with ctx.store.session() as s:
        src, _cs = web_repo.get_collection(s, ctx.user, ctx.request.path_params["source_id"])
        old = src.name
        if src.deleted_at is not None:  # a deactivated collection's settings are frozen (its confirmation says so)
            raise SwathError("this collection is deactivated: reactivate it to rename it", code=codes.BAD_REQUEST)
        if name != old:
            if repo.name_taken(s, name, collection_set_id=src.collection_set_id):
                raise SwathError(f"Name: your group has a collection named {name!r} already (a deactivated one "
                                 "counts too); choose another name", code=codes.BAD_REQUEST)
            src.name = name
            web_repo.log_change(s, set_id=src.collection_set_id, source_id=src.id, user=ctx.user.name,
                                action="renamed collection", detail=f"{old} → {name}")
        folder = f"collections/{src.collection_set_id}/{src.collection_id}"
    return ctx.redirect(f"/collections/{src.id}", flash=f"Renamed {old} to {name}; " + KEPT.format(folder) + ".")


@action
def rename_set(ctx: Ctx) -> Response:
    name = fields.name(ctx.field("name"))
    with ctx.store.session() as s:
        cs = web_repo.get_set(s, ctx.user, ctx.request.path_params["set_id"])
        old = cs.name
        if name != old:
            if web_repo.set_name_taken(s, cs.group_id, name):
                raise SwathError(f"Name: your group has a collection set named {name!r} already; choose another "
                                 "name", code=codes.BAD_REQUEST)
            cs.name = name
            web_repo.log_change(s, set_id=cs.id, source_id=None, user=ctx.user.name, action="renamed set",
                                detail=f"{old} → {name}")
    return ctx.redirect(f"/sets/{cs.id}", flash=f"Renamed {old} to {name}; " + KEPT.format(f"collections/{cs.id}")
                        + ".")


ROUTES = [
    Route("/collections/{source_id}/rename", rename_collection, methods=["POST"]),
    Route("/sets/{set_id}/rename", rename_set, methods=["POST"]),
]
