"""A source's settings read from the command line and checked against its harvest type.

`harvest create` and `harvest update` (source_update.py) share these checks, so nothing is stored that would
fail only when it runs: options by the type's schema (`rows=10` is read as a number, `rows=ten` refused),
unknown option keys, seed URLs for the URL-seeded types, the credentials a type needs (by name), and
collection ids that stay one folder under collections/.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from swath.core.paths import safe_id
from swath.messages import codes, settings
from swath.requester import RequestError
from swath.store import repo


def parse_options(harvest_type: str, pairs: Iterable[str]) -> dict[str, Any]:
    """KEY=VALUE pairs, each value read by the type its schema declares."""
    opts: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RequestError(f"--option {pair!r} is not KEY=VALUE", code=codes.BAD_REQUEST)
        opts[key] = settings.parse_option(harvest_type, key, value)
    return opts


def seeds_from(tokens: Iterable[str], uids: Iterable[str]) -> list[dict[str, Any]]:
    return [*({"id": repo.new_id(), "token": t} for t in tokens), *({"id": repo.new_id(), "uid": u} for u in uids)]


def credential_names(pairs: Iterable[str]) -> list[str]:
    """The names of --credential / --credential-file pairs, read before any value is."""
    return [pair.partition("=")[0] for pair in pairs]


def check_source(harvest_type: str, *, options: dict[str, Any], seeds: list[dict[str, Any]],
                 credentials: Iterable[str], collection_ids: dict[str, str | None]) -> None:
    """RequestError (bad_request) naming every setting the type would refuse."""
    found = [f"{flag} {value!r}: use letters, digits, '.', '_' and '-' only (it becomes a folder name)"
             for flag, value in collection_ids.items() if value is not None and safe_id(value) != value]
    found += settings.problems(harvest_type, options=options, seeds=seeds, credentials=credentials)
    if found:
        raise RequestError("; ".join(found), code=codes.BAD_REQUEST)
