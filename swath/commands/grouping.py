"""`--group NAME` on the commands that make what the web lists (`swath harvest create`, `swath export start`):
the object belongs to that group's collection set, so the group's members see it in the web; the history and the
export's requester say "command line"."""

from __future__ import annotations

from collections.abc import Callable

import click

from swath.store import Store, repo, web_repo
from swath.store.models import Export, Source
from swath.store.web_models import CollectionSet

GROUP_OPTION = click.option("--group", default=None, metavar="NAME",
                            help="The web group that owns it (an existing group); its members see it in `swath web`.")
BY = "command line"  # who the web's history and export pages name


def create_in_group(store: Store, group: str, set_id: str, create: Callable[[], Source]) -> Source:
    """`create()` the source in collection set `set_id` of `group` (made for the group when new, and removed
    again if the source is refused), recorded in the set's history."""
    with store.session() as s:
        made = web_repo.claim_set(s, set_id, group)
        if made:
            web_repo.log_change(s, set_id=set_id, source_id=None, user=BY, action="created set",
                                detail=f"{set_id} (group {group})")
    try:
        src = create()
    except BaseException:
        if made:
            with store.session() as s:
                s.query(CollectionSet).filter(CollectionSet.id == set_id).delete()
        raise
    with store.session() as s:
        web_repo.log_change(s, set_id=set_id, source_id=src.id, user=BY, action="created collection",
                            detail=f"{src.name}: {src.harvest_type}, {len(src.seeds)} seed(s)")
    return src


def export_owner(store: Store, group: str, source: str | None, collection: str | None) -> tuple[str, str]:
    """(collection set id, source id) of the collection an export with --group is of, checked to be the group's."""
    with store.session() as s:
        owner = web_repo.group_named(s, group)
        if source:
            found = [repo.find_source(s, source, deleted=True)]
        elif collection:
            found = [src for src in repo.list_sources(s, deleted=True) if src.collection_id == collection]
        else:
            raise click.UsageError("--group needs --source or --collection (an export of seed uids has no group)")
        for src in found:
            cs = s.get(CollectionSet, src.collection_set_id)
            if cs is not None and cs.group_id == owner.id:
                return cs.id, src.id
    raise repo.NotFound(f"group {group!r} has no collection {source or collection!r}; `swath harvest sources` "
                        "lists them")


def record_export(store: Store, export: Export, owner: tuple[str, str]) -> None:
    with store.session() as s:
        web_repo.add_export_request(s, export_id=export.id, set_id=owner[0], source_id=owner[1], user=BY)
