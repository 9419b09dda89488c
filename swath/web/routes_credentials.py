"""Credentials as objects of a group (swath/store/group_credentials.py): add, list with where each is used,
rotate, and use one in a collection. Values are sealed as they arrive and never shown again; a credential of
another group is a 404, as a missing one is."""

from __future__ import annotations

from sqlalchemy.orm import Session
from starlette.responses import Response
from starlette.routing import Route

from swath.core.errors import SwathError
from swath.messages import codes
from swath.source_settings import check_source
from swath.store import group_credentials, repo, web_repo
from swath.store.group_credentials import GroupCredential
from swath.store.web_models import Group
from swath.web import fields, forms
from swath.web.views import Ctx, action, page


def _my_groups(ctx: Ctx, s: Session) -> list[Group]:
    return web_repo.list_groups(s) if ctx.user.is_admin else web_repo.groups_of(s, ctx.user)


def _needing() -> list[forms.TypeInfo]:
    return [t for t in forms.harvest_types() if t.credentials]


@page
def list_credentials(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        rows = group_credentials.of_user(s, ctx.user)
        used = {c.id: len(group_credentials.users_of(s, c)) for c in rows}
        groups = {g.id: g.name for g in web_repo.list_groups(s)}
    return ctx.render("credentials.html", credentials=rows, used=used, groups=groups, types=_needing())


def _new_form(ctx: Ctx, harvest_type: str, *, error: str | None = None, status: int = 200) -> Response:
    info = forms.type_info(harvest_type)
    with ctx.store.session() as s:
        groups = _my_groups(ctx, s)
    return ctx.render("credential_new.html", status=status, info=info, names=forms.credential_names(info),
                      groups=groups, error=error, values={k: ctx.field(k) for k in ("name", "group")})


@page
def new_credential(ctx: Ctx) -> Response:
    return _new_form(ctx, ctx.request.query_params.get("type", ""))


@action
def create_credential(ctx: Ctx) -> Response:
    harvest_type = ctx.field("type")
    info = forms.type_info(harvest_type)
    try:
        name = fields.name(ctx.field("name"))
        values = _values(ctx, forms.credential_names(info))
        if not any(set(need) <= set(values) for need in info.credentials):
            raise SwathError("give " + ", or ".join(" and ".join(need) for need in info.credentials),
                             code=codes.BAD_REQUEST)
        from swath.harvesters.registry import lookup

        with ctx.store.session() as s:
            group = {g.id: g for g in _my_groups(ctx, s)}.get(ctx.field("group"))
            if group is None:
                raise SwathError("Group: choose one of your groups to own the credential", code=codes.BAD_REQUEST)
            row = group_credentials.add(s, group_id=group.id, name=name, platform=lookup(harvest_type).platform,
                                        values=values, box=ctx.web.requester.secret_box(), user=ctx.user.name)
            credential_id = row.id
    except SwathError as exc:
        return _new_form(ctx, harvest_type, error=exc.message, status=400)
    return ctx.redirect(f"/credentials/{credential_id}", flash=f"Credential {name} is saved, encrypted; its values "
                        "are never shown again. Choose it when you make a collection, or on a collection's page.")


def _values(ctx: Ctx, names: list[str]) -> dict[str, str]:
    """The values typed for these names (empty ones left out); an env: reference is no value to keep here."""
    values = {n: ctx.field(f"cred.{n}") for n in names if ctx.field(f"cred.{n}")}
    if any(v.startswith(("env:", group_credentials.PREFIX)) for v in values.values()):
        raise SwathError("a group credential keeps values, not references; give the value itself",
                         code=codes.BAD_REQUEST)
    return values


@page
def show_credential(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        row = group_credentials.get(s, ctx.user, ctx.request.path_params["credential_id"])
        group = s.get(Group, row.group_id)
        return ctx.render("credential.html", credential=row, group=group,
                          names=group_credentials.value_names(s, row), users=group_credentials.users_of(s, row))


@action
def rotate_credential(ctx: Ctx) -> Response:
    with ctx.store.session() as s:
        row = group_credentials.get(s, ctx.user, ctx.request.path_params["credential_id"])
        names = group_credentials.value_names(s, row)
        group_credentials.rotate(s, row, _values(ctx, names), ctx.web.requester.secret_box())
        users = group_credentials.users_of(s, row)
        for src in users:  # each collection's history says its credential changed (not to what)
            web_repo.log_change(s, set_id=src.collection_set_id, source_id=src.id, user=ctx.user.name,
                                action="rotated credential", detail=row.name)
        where, name = row.id, row.name
    return ctx.redirect(f"/credentials/{where}", flash=f"Credential {name} is rotated: the next harvest of each of "
                        f"its {len(users)} collection(s) uses the new values; the old ones are gone.")


def usable(s: Session, harvest_type: str, group_id: str) -> list[GroupCredential]:
    """The group's credentials that give every value of one of the harvest type's needs."""
    needs = forms.type_info(harvest_type).credentials
    return [c for c in group_credentials.of_group(s, group_id)
            if any(set(need) <= set(group_credentials.value_names(s, c)) for need in needs)]


def references(s: Session, credential_id: str, set_id: str) -> dict[str, str]:
    """Credential name -> `credential:<id>` for a collection of set `set_id`; NotFound for another group's."""
    row = group_credentials.for_set(s, credential_id, set_id)
    return dict.fromkeys(group_credentials.value_names(s, row), group_credentials.reference(row.id))


@action
def use_credential(ctx: Ctx) -> Response:
    """A collection takes a group credential in place of the credentials it had."""
    with ctx.store.session() as s:
        src, cs = web_repo.get_collection(s, ctx.user, ctx.request.path_params["source_id"])
        if cs is None:
            raise repo.NotFound("no group owns this collection: use the command line's credentials")
        refs = references(s, ctx.field("credential"), cs.id)
        check_source(src.harvest_type, options=src.options, seeds=src.seeds, credentials=list(refs),
                     collection_ids={})
        src.credentials = refs  # a new object: the JSON column sees the change
        name = group_credentials.for_set(s, ctx.field("credential"), cs.id).name
        web_repo.log_change(s, set_id=cs.id, source_id=src.id, user=ctx.user.name, action="uses credential",
                            detail=name)
    return ctx.redirect(f"/collections/{src.id}", flash=f"This collection uses credential {name} now.")


ROUTES = [
    Route("/credentials", list_credentials, methods=["GET"]),
    Route("/credentials", create_credential, methods=["POST"]),
    Route("/credentials/new", new_credential, methods=["GET"]),
    Route("/credentials/{credential_id}", show_credential, methods=["GET"]),
    Route("/credentials/{credential_id}/rotate", rotate_credential, methods=["POST"]),
    Route("/collections/{source_id}/credential", use_credential, methods=["POST"]),
]
