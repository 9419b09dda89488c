"""A source's settings read from the command line or a web form and checked against its harvest type, and the
changes `swath harvest validate|schedule|unschedule|update` and the web application make to a source.

`harvest create`, `harvest update` (commands/source_update.py) and the web forms share these checks, so nothing
is stored that would fail only when it runs: options by the type's schema (`rows=10` is read as a number,
`rows=ten` refused), unknown option keys, seed URLs for the URL-seeded types, the credentials a type needs (by
name), and collection ids that stay one folder under collections/.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from sqlalchemy.orm import Session

from swath.core.jsontypes import JSONObject
from swath.core.paths import safe_id
from swath.messages import codes, settings
from swath.requester import RequestError
from swath.store import repo
from swath.store.models import ACCEPTED, PENDING, REFUSED, Source, utcnow


def parse_options(harvest_type: str, pairs: Iterable[str]) -> JSONObject:
    """KEY=VALUE pairs, each value read by the type its schema declares."""
    opts: JSONObject = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise RequestError(f"--option {pair!r} is not KEY=VALUE", code=codes.BAD_REQUEST)
        opts[key] = settings.parse_option(harvest_type, key, value)
    return opts


def seeds_from(tokens: Iterable[str], uids: Iterable[str]) -> list[dict[str, str]]:
    return [*({"id": repo.new_id(), "token": t} for t in tokens), *({"id": repo.new_id(), "uid": u} for u in uids)]


def credential_names(pairs: Iterable[str]) -> list[str]:
    """The names of --credential / --credential-file pairs, read before any value is."""
    return [pair.partition("=")[0] for pair in pairs]


class SettingsRefused(RequestError):
    """Settings the type refuses; `problems` has one line per field, each starting with the field's name and ': '
    (messages/settings.py), so a form can show each beside its field."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems), code=codes.BAD_REQUEST)
        self.problems = problems


def check_source(harvest_type: str, *, options: Mapping[str, object], seeds: Sequence[Mapping[str, object]],
                 credentials: Iterable[str], collection_ids: dict[str, str | None]) -> None:
    """SettingsRefused (bad_request) naming every setting the type would refuse."""
    found = [f"{flag} {value!r}: use letters, digits, '.', '_' and '-' only (it becomes a folder name)"
             for flag, value in collection_ids.items() if value is not None and safe_id(value) != value]
    found += settings.problems(harvest_type, options=options, seeds=seeds, credentials=credentials)
    if found:
        raise SettingsRefused(found)


# ---- what `swath harvest validate|schedule|unschedule|update` and the web application do to a source ----


def validate(s: Session, ident: str, *, refuse: bool, comment: str | None) -> Source:
    """Accept the source so it may run, or refuse it (a comment saying why is required)."""
    if refuse and not (comment or "").strip():
        raise RequestError("refusing a source needs a comment saying why", code=codes.BAD_REQUEST)
    src = repo.find_source(s, ident)
    repo.set_validation(s, src, REFUSED if refuse else ACCEPTED, comment)
    return src


def schedule(s: Session, ident: str, *, every: str | None, cron: str | None) -> Source:
    """Run the source every INTERVAL (30s, 15m, 6h, 1d) or by a five-field cron expression (UTC)."""
    from swath.scheduler import BadSchedule, parse_schedule

    if (every is None) == (cron is None):
        raise RequestError("give exactly one of an interval (every) or a cron expression", code=codes.BAD_SCHEDULE)
    kind, expr = ("interval", every) if every else ("cron", cron)
    assert expr is not None
    try:
        parsed = parse_schedule(kind, expr)
    except BadSchedule as exc:
        raise RequestError(str(exc), code=exc.code) from None
    src = repo.find_source(s, ident)
    repo.set_schedule(s, src, kind=kind, expr=expr.strip(), next_due=parsed.first_due(utcnow()))
    return src


def unschedule(s: Session, ident: str) -> Source:
    src = repo.find_source(s, ident)
    repo.set_schedule(s, src, kind=None, expr=None, next_due=None)
    return src


def update(s: Session, ident: str, *, options: Mapping[str, object] | None = None, unset: Iterable[str] = (),
           seeds: Sequence[Mapping[str, object]] | None = None) -> tuple[Source, bool]:
    """Change options (set `options`, remove `unset`) or replace the seeds, checked as creating checks them;
    an accepted source that changed goes back to pending. Returns (source, changed)."""
    src = repo.find_source(s, ident)
    new_options = {k: v for k, v in src.options.items() if k not in set(unset)}
    new_options.update(options or {})
    new_seeds = list(seeds) if seeds else list(src.seeds)
    check_source(src.harvest_type, options=new_options, seeds=new_seeds, credentials=src.credentials,
                 collection_ids={})
    changed = new_options != src.options or new_seeds != src.seeds
    src.options, src.seeds = new_options, new_seeds  # new objects: the JSON columns see the change
    if changed and src.validation == ACCEPTED:
        repo.set_validation(s, src, PENDING, "settings changed; validate again")
    return src, changed
