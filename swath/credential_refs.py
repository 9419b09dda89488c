"""A source's credentials by reference: NAME=env:VAR (the requester's environment), NAME=group:... (a credential
of its group, swath/store/group_credentials.py) or "stored" (the value sealed in the store with the configured
key, swath/store/secrets.py). References are read from the command line or a form; values are resolved only
while a harvest.start is built, and never logged or printed."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping

from swath.core.jsontypes import JSONObject
from swath.messages import codes
from swath.request_error import RequestError
from swath.store import Store, group_credentials, repo
from swath.store.models import Source
from swath.store.secrets import CredentialKeyError, SecretBox

STORED = "stored"
CREDENTIAL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")
ENV_PREFIX = "env:"


def check_credential_name(name: str) -> str:
    if not CREDENTIAL_NAME.fullmatch(name):
        # it may be a secret typed in the wrong place: say what is wrong, never echo it
        raise RequestError("a credential name is a letter or _ then letters, digits, _ . or - (at most 100); "
                           "give NAME=env:VARIABLE, NAME=@FILE, or NAME alone to be prompted",
                           code=codes.BAD_REQUEST)
    return name


def parse_credentials(pairs: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """NAME=env:VAR (a reference) or NAME=VALUE (kept in the store, sealed) -> (references, stored values)."""
    refs: dict[str, str] = {}
    stored: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise RequestError("a credential is NAME=env:VARIABLE or NAME=VALUE", code=codes.BAD_REQUEST)
        check_credential_name(name)
        if value.startswith((ENV_PREFIX, group_credentials.PREFIX)):  # references, no value
            refs[name] = value
        else:
            refs[name], stored[name] = STORED, value
    return refs, stored


def resolve(store: Store, source: Source, *, env: Mapping[str, str], box: Callable[[], SecretBox]) -> JSONObject:
    """The source's credentials by name with their values (never log or print them); a reference without a
    value is refused with credential_missing. `box` is called only when a value is stored (its key may be unset)."""
    stored: dict[str, str] = {}
    shared = group_credentials.referenced(source)
    if STORED in source.credentials.values() or shared:
        try:
            with store.session() as s:
                stored = repo.secrets_of(s, source, box())
                stored |= group_credentials.values_for(s, source, box()) if shared else {}
        except CredentialKeyError as exc:  # a RequestError, so a scheduled launch fails its job with the code
            raise RequestError(exc.message, code=exc.code) from None
    resolved: JSONObject = {}
    for name, ref in source.credentials.items():
        from_env = ref.startswith(ENV_PREFIX)
        value = env.get(ref[len(ENV_PREFIX):]) if from_env else stored.get(name)
        if not value:
            variable = ref[len(ENV_PREFIX):]
            where = (f"environment variable {variable}: set it where the harvest is launched (this command, or "
                     "`swath scheduler` for scheduled runs)") if from_env else (
                "the store: delete the source and create it again with the value" if ref == STORED else
                "its group's credential (deleted, or of another group): choose one with *Use this credential* on the "
                "collection's page")
            raise RequestError(f"credential {name!r} of source {source.name!r} has no value in {where}",
                               code=codes.CREDENTIAL_MISSING)
        resolved[name] = value
    return resolved
