"""Load the JSON Schemas shipped in `schemas/` and validate message bodies against them."""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import cast

import jsonschema
from jsonschema.validators import Draft202012Validator
from referencing import Registry, Resource

from swath.core.errors import SwathError
from swath.core.jsontypes import JSONObject
from swath.messages import codes
from swath.messages.bodies import HarvestStartBody
from swath.messages.settings import check_start, placeholders

SCHEMA_NAMES = (
    "harvest_start",
    "harvest_stop",
    "harvest_status",
    "warc_created",
    "export_start",
    "export_status",
)


class InvalidMessage(SwathError, ValueError):
    """A message body failed its schema (or is not JSON); `code=` says which, str() reads well."""

    code = codes.SCHEMA_INVALID


@functools.cache
def _registry() -> Registry:
    registry = Registry()
    for entry in resources.files("swath.schemas").iterdir():
        if entry.name.endswith(".json"):
            doc = json.loads(entry.read_text("utf-8"))
            registry = registry.with_resource(doc["$id"], Resource.from_contents(doc))
    return registry


@functools.cache
def schema(name: str) -> JSONObject:
    if name not in SCHEMA_NAMES:
        raise KeyError(f"no schema named {name!r}; known: {', '.join(SCHEMA_NAMES)}")
    loaded: JSONObject = json.loads(resources.files("swath.schemas").joinpath(f"{name}.json").read_text("utf-8"))
    return loaded


@functools.cache
def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name), registry=_registry())


def _describe(error: jsonschema.ValidationError) -> str:
    """A readable line for one schema error that never quotes a credential."""
    path = list(error.absolute_path)
    where = "/".join(str(p) for p in path) or "(top level)"
    if error.validator == "oneOf" and not path:
        return f"at {where}: give exactly one of 'seeds' or 'collection'"
    if _may_quote(error):
        return f"at {where}: {error.message}"
    # jsonschema's message would quote the value (a credential, or a whole object holding some)
    if error.validator == "type":
        return f"at {where}: must be of type {error.validator_value}"
    return f"at {where}: does not satisfy '{error.validator}'"


def _may_quote(error: jsonschema.ValidationError) -> bool:
    if error.absolute_path and error.absolute_path[0] == "credentials":
        return False
    if error.validator == "required":  # names the missing property, not the instance
        return True
    return isinstance(error.instance, (str, int, float, bool)) or error.instance is None


def validate(name: str, body: object) -> None:
    """Raise InvalidMessage naming every problem if `body` does not match schema `name`."""
    errors = sorted(validator(name).iter_errors(body), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        detail = "; ".join(_describe(e) for e in errors[:5])
        more = f" (and {len(errors) - 5} more)" if len(errors) > 5 else ""
        raise InvalidMessage(f"{name} message is invalid {detail}{more}", code=codes.SCHEMA_INVALID)
    if name == "harvest_start":  # then what its harvest type declares: options, seeds, credentials
        body = cast(HarvestStartBody, body)  # the schema passed: an object with a text type
        found = check_start(body)
        if found:
            raise InvalidMessage(f"harvest_start message is invalid for type {body['type']!r}: {'; '.join(found)}",
                                 code=codes.SCHEMA_INVALID)
        unfilled = placeholders(body.get("credentials"))
        if unfilled:  # refused here, before any request could carry it
            names = ", ".join(f"credentials.{name}" for name in unfilled)
            raise InvalidMessage(f"{names} still {'holds' if len(unfilled) == 1 else 'hold'} the YOUR_<NAME> "
                                 "placeholder of `swath harvest example`: put the real value in the message; "
                                 "nothing was sent", code=codes.CREDENTIAL_PLACEHOLDER)


def validate_for_key(routing_key: str, body: object) -> None:
    """Validate `body` against the schema its routing key implies (raises InvalidMessage); each routing-key
    kind of messages.routing names its schema."""
    from swath.messages import codes, routing

    try:
        kind = routing.parse(routing_key).kind
    except routing.BadRoutingKey as exc:
        raise InvalidMessage(str(exc), code=codes.UNKNOWN_ROUTING_KEY) from None
    validate(kind, body)
