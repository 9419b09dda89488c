"""A harvest's settings checked against its type's declaration: options, seeds and credentials.

The same rules serve `swath harvest create`/`update` (before anything is stored) and harvest.start validation
(`validation.validate`), so a source that is accepted makes a message that is. Each problem names its field;
credential values are never quoted (only their names are looked at).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import re
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit

import jsonschema
import orjson
from jsonschema.validators import Draft202012Validator

from swath.core import discovery
from swath.core.errors import SwathError
from swath.core.jsontypes import JSON
from swath.core.platforms import HarvestKind, Platform
from swath.messages import codes


def declaration(type_name: str) -> tuple[Platform, HarvestKind] | None:
    """The platform declaring this harvest type and its kind; None for an undeclared type (a backend plugin)."""
    platform = discovery.owner(type_name, lambda p: p.harvest_methods)
    kind = platform.harvest_kind(type_name) if platform else None
    return (platform, kind) if platform and kind else None


def problems(type_name: str, *, options: object, seeds: object, credentials: Iterable[str]) -> list[str]:
    """Every way these settings break the type's declaration, one readable line each (empty: fine). Each line
    starts with the field it is about (`options.from`, `seeds[2].token`, `seeds`, `credentials`), then ': '."""
    found = declaration(type_name)
    if found is None:
        return []
    platform, kind = found
    return [*option_problems(platform, options), *seed_problems(kind, seeds),
            *credential_problems(platform, kind, credentials)]


def option_problems(platform: Platform, options: object) -> list[str]:
    if not platform.options:
        return []
    errors = sorted(_validator(platform.name, orjson.dumps(platform.options)).iter_errors(options),
                    key=lambda e: list(map(str, e.absolute_path)))
    return [_describe_option(platform, e) for e in errors]


def _is_date(value: object) -> bool:
    return not isinstance(value, str) or (_DATE.match(value) is not None and _parses(dt.date.fromisoformat, value))


def _is_date_time(value: object) -> bool:
    return not isinstance(value, str) or (_DATE_TIME.match(value) is not None and _parses(
        dt.datetime.fromisoformat, value.replace("Z", "+00:00").replace("z", "+00:00")))


def _parses(parse: Callable[[str], object], value: str) -> bool:
    try:
        parse(value)
    except ValueError:
        return False
    return True


def _is_regex(value: object) -> bool:
    return not isinstance(value, str) or _parses(re.compile, value)


_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")
_DATE_TIME = re.compile(
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?([Zz]|[+-][0-9]{2}:?[0-9]{2})?$")
# formats an option schema may name, checked (jsonschema checks none by default), and how a refusal says them
FORMATS: dict[str, tuple[Callable[[object], bool], str]] = {
    "date": (_is_date, "a date (YYYY-MM-DD)"),
    "date-time": (_is_date_time, "a date and time (YYYY-MM-DDTHH:MM:SSZ)"),
    "date-or-date-time": (lambda v: _is_date(v) or _is_date_time(v), "a date (YYYY-MM-DD) or date and time"),
    "uri": (lambda v: not isinstance(v, str) or is_http_url(v), "an http(s) URL with a valid port"),
    "regex": (_is_regex, "a regular expression"),
}
_FORMAT_CHECKER = jsonschema.FormatChecker(formats=())
for _name, (_check, _words) in FORMATS.items():
    _FORMAT_CHECKER.checks(_name)(_check)


@functools.lru_cache(maxsize=64)
def _validator(name: str, schema: bytes) -> Draft202012Validator:
    return Draft202012Validator(orjson.loads(schema), format_checker=_FORMAT_CHECKER)


def _describe_option(platform: Platform, error: jsonschema.ValidationError) -> str:
    where = "options" + "".join(f".{p}" if isinstance(p, str) else f"[{p}]" for p in error.absolute_path)
    if error.validator == "additionalProperties":
        known = sorted(platform.options.get("properties", {}))
        unknown = sorted(set(error.instance) - set(known)) if isinstance(error.instance, dict) else []
        return (f"{', '.join('options.' + u for u in unknown)}: not an option of {platform.title} harvests; "
                f"known: {', '.join(known) or 'none'}")
    if error.validator == "type":
        return f"{where}: {error.instance!r} is not {_a(error.validator_value)}"
    if error.validator == "format" and error.validator_value in FORMATS:
        return f"{where}: {error.instance!r} is not {FORMATS[error.validator_value][1]}"
    return f"{where}: {error.message}"


def _a(json_type: object) -> str:
    names = {"integer": "a whole number", "number": "a number", "boolean": "true or false", "string": "a string",
             "array": "a list", "object": "an object"}
    types = json_type if isinstance(json_type, list) else [json_type]
    return " or ".join(names.get(str(t), str(t)) for t in types)


def seed_problems(kind: HarvestKind, seeds: object) -> list[str]:
    seeds = seeds if isinstance(seeds, list) else []
    rule = kind.seeds
    if rule.required and rule.token != "none" and not seeds:
        return [f"seeds: {kind.name} needs at least one seed"]
    found = _duplicates(seeds) + [
        f"seeds[{i}].token: {len(seed['token'])} characters; {kind.name} takes at most {rule.max_length}"
        for i, seed in enumerate(seeds) if isinstance(seed, Mapping) and isinstance(seed.get("token"), str)
        and len(seed["token"]) > rule.max_length]
    if rule.token != "url":
        return found
    for i, seed in enumerate(seeds):
        token = seed.get("token") if isinstance(seed, Mapping) else None
        if not isinstance(token, str) or not token.strip():
            found.append(f"seeds[{i}].token: {kind.name} needs the endpoint's http(s) URL as the token")
        elif not _port_ok(token):
            found.append(f"seeds[{i}].token: {token!r} has a port that is not one (a number from 1 to 65535)")
        elif not is_http_url(token):
            found.append(f"seeds[{i}].token: {token!r} is not an http(s) URL (write it with its scheme, "
                         f"e.g. https://{token.strip().split('://')[-1]})")
    return found


def _duplicates(seeds: list[object]) -> list[str]:
    """A token or uid given twice: the second is refused, naming the first."""
    seen: dict[tuple[str, str], int] = {}
    found = []
    for i, seed in enumerate(seeds):
        for key in ("token", "uid"):
            value = seed.get(key) if isinstance(seed, Mapping) else None
            if isinstance(value, str) and value.strip():
                first = seen.setdefault((key, value.strip()), i)
                if first != i:
                    found.append(f"seeds[{i}].{key}: {value.strip()!r} is seeds[{first}] already (given twice)")
    return found


def is_http_url(text: str) -> bool:
    """An http(s) URL with a host and, when it names one, a port that exists (1-65535)."""
    parts = urlsplit(text.strip())
    return parts.scheme in ("http", "https") and bool(parts.hostname) and _port_ok(text)


def _port_ok(text: str) -> bool:
    try:
        return urlsplit(text.strip()).port != 0  # ValueError for a port that is not a number in range
    except ValueError:
        return False


def credential_problems(platform: Platform, kind: HarvestKind, names: Iterable[str]) -> list[str]:
    given = set(names)
    if not platform.credentials or any(set(need) <= given for need in platform.credentials):
        return []
    options = ", or ".join(" and ".join(need) for need in platform.credentials)
    return [f"credentials: {kind.name} needs {options}"]


def present(credentials: object) -> list[str]:
    """The names of a message's credentials that have a value (values themselves are not looked at further)."""
    if not isinstance(credentials, Mapping):
        return []
    return [str(name) for name, value in credentials.items() if value not in (None, "")]


PLACEHOLDER = re.compile(r"^YOUR_[A-Z0-9_]+$")  # what `swath harvest example` puts where a credential goes


def placeholders(credentials: object) -> list[str]:
    """The credential names whose value is still an example's YOUR_<NAME> placeholder."""
    if not isinstance(credentials, Mapping):
        return []
    return sorted(str(name) for name, value in credentials.items()
                  if isinstance(value, str) and PLACEHOLDER.match(value.strip()))


def check_start(body: Mapping[str, object]) -> list[str]:
    """The problems of a harvest.start body that already passed its JSON Schema."""
    return problems(str(body.get("type", "")), options=body.get("options", {}), seeds=body.get("seeds", []),
                    credentials=present(body.get("credentials")))


class BadOption(SwathError, ValueError):
    """A KEY=VALUE from the command line that the type's option schema cannot read."""

    code = codes.BAD_REQUEST


def parse_option(type_name: str, key: str, raw: str) -> JSON:
    """A command-line option value read by the type the schema declares (`rows=10` -> 10); JSON, else the text,
    where the schema says nothing. Raises BadOption naming the option."""
    found = declaration(type_name)
    spec = found[0].options.get("properties", {}).get(key, {}) if found else {}
    wanted = spec.get("type")
    if wanted == "string":
        return raw
    if wanted == "boolean":
        lowered = raw.strip().lower()
        if lowered in ("true", "yes", "1", "on"):
            return True
        if lowered in ("false", "no", "0", "off"):
            return False
        raise BadOption(f"--option {key}={raw!r}: {key} takes true or false")
    if wanted in ("integer", "number"):
        try:
            number = int(raw) if wanted == "integer" else float(raw)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise BadOption(f"--option {key}={raw!r}: {key} takes {_a(wanted)}")
        return number
    if wanted == "array" and not raw.lstrip().startswith("["):
        return [part.strip() for part in raw.split(",") if part.strip()]  # sizes=Thumbnail,Large
    try:
        parsed: JSON = orjson.loads(raw)
        return parsed
    except orjson.JSONDecodeError:
        return raw
