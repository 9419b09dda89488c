"""Forms generated from a harvest type's declaration: its option schema (the one `swath harvest create` checks
with, core/platforms.py + messages/settings.py), the credentials it needs and the kind of seeds it reads."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from swath.core.errors import SwathError
from swath.core.jsontypes import JSONObject
from swath.messages import codes, settings
from swath.source_settings import SettingsRefused, seeds_from


@dataclass(frozen=True)
class Field:
    name: str  # the option's key; the form field is "opt.<name>"
    kind: str  # "bool" (a yes/no/default choice), "number", "integer", "text", "list", "choice"
    description: str
    choices: tuple[str, ...] = ()
    default: str = ""
    value: str = ""
    error: str = ""  # why the value typed was refused, shown beside the field
    label: str = ""  # as people say it: the schema's title, else the key in words (metadataPrefix: Metadata prefix)


@dataclass(frozen=True)
class TypeInfo:
    name: str
    title: str
    stream: bool
    seeds: str  # "text", "url" or "none" (core/platforms.py SEED_TOKENS)
    credentials: tuple[tuple[str, ...], ...]


def harvest_types() -> list[TypeInfo]:
    from swath.harvesters.registry import harvester_types

    out = []
    for ht in harvester_types():
        found = settings.declaration(ht.name)
        platform, kind = found if found else (None, None)
        out.append(TypeInfo(name=ht.name, title=platform.title if platform else ht.platform, stream=ht.stream,
                            seeds=kind.seeds.token if kind else "text",
                            credentials=platform.credentials if platform else ()))
    return sorted(out, key=lambda t: (t.title.lower(), t.name))


def type_info(name: str) -> TypeInfo:
    for info in harvest_types():
        if info.name == name:
            return info
    raise SwathError(f"no harvest type {name!r}", code=codes.UNKNOWN_TYPE)


def option_names(harvest_type: str) -> list[str]:
    found = settings.declaration(harvest_type)
    return list(found[0].options.get("properties", {})) if found else []


def option_fields(harvest_type: str, values: Mapping[str, object] | None = None,
                  errors: Mapping[str, str] | None = None) -> list[Field]:
    found = settings.declaration(harvest_type)
    properties = found[0].options.get("properties", {}) if found else {}
    values = values or {}
    fields = []
    for name, spec in properties.items():
        wanted = spec.get("type")
        kind = ("choice" if "enum" in spec else "bool" if wanted == "boolean" else "list" if wanted == "array"
                else wanted if wanted in ("integer", "number") else "text")
        current = values.get(name)
        shown = ("true" if current else "false") if isinstance(current, bool) else (
            ", ".join(map(str, current)) if isinstance(current, list) else "" if current is None else str(current))
        default = spec.get("default")
        fields.append(Field(name=name, kind=kind, description=spec.get("description", ""),
                            choices=tuple(map(str, spec.get("enum", ()))),
                            default="" if default is None else str(default).lower() if isinstance(default, bool)
                            else str(default), value=shown, error=(errors or {}).get(f"opt.{name}", ""),
                            label=spec.get("title") or _words(name)))
    return fields


def _words(key: str) -> str:
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", key).replace("_", " ")
    return spaced[:1].upper() + spaced[1:].lower()


def read_options(harvest_type: str, form: Mapping[str, object]) -> JSONObject:
    """The options a form sets (an empty field: not set), each read by its schema type; SettingsRefused names
    every field that cannot be read."""
    options: JSONObject = {}
    refused = []
    for field in option_fields(harvest_type):
        raw = form.get(f"opt.{field.name}")
        if isinstance(raw, str) and raw.strip():
            try:
                options[field.name] = settings.parse_option(harvest_type, field.name, raw.strip())
            except settings.BadOption as exc:
                refused.append(f"options.{field.name}: " + exc.message.split(": ", 1)[-1])
    if refused:
        raise SettingsRefused(refused)
    return options


def field_errors(problems: list[str]) -> dict[str, str]:
    """The form field each problem line is about (`options.from: ...` -> `opt.from`, `seeds[2].token: ...` ->
    `seeds`), its message as the value; lines about no field of the form go under ''."""
    out: dict[str, str] = {}
    for line in problems:
        where, _sep, what = line.partition(": ")
        head = where.split("[", 1)[0].split(".", 2)
        name = f"opt.{head[1]}" if head[0] == "options" and len(head) > 1 else head[0] if head[0] in (
            "seeds", "credentials") else ""
        out[name] = f"{out[name]}; {what}" if name in out else (what if name else line)
    return out


def typed_values(harvest_type: str, form: Mapping[str, object]) -> dict[str, str]:
    """The option fields as typed, to show a refused form again."""
    return {f.name: raw for f in option_fields(harvest_type) if isinstance(raw := form.get(f"opt.{f.name}"), str)}


def read_seeds(form: Mapping[str, object]) -> list[dict[str, str]]:
    """Seeds pasted one per line: tokens (accounts, blogs, endpoint URLs) and, separately, uids."""
    return seeds_from(_lines(form.get("seeds")), _lines(form.get("seed_uids")))


def _lines(value: object) -> list[str]:
    return [line.strip() for line in str(value or "").splitlines() if line.strip()]


def credential_names(info: TypeInfo) -> list[str]:
    names: list[str] = []
    for need in info.credentials:
        names += [n for n in need if n not in names]
    return names


def read_credentials(info: TypeInfo, form: Mapping[str, object]) -> tuple[list[str], dict[str, str]]:
    """(NAME=env:VAR references, name -> value to seal) from the credential fields; empty fields are skipped."""
    refs: list[str] = []
    values: dict[str, str] = {}
    for name in credential_names(info):
        raw = form.get(f"cred.{name}")
        if not isinstance(raw, str) or not raw.strip():
            continue
        if raw.startswith("env:"):
            refs.append(f"{name}={raw.strip()}")
        else:
            values[name] = raw.strip()
    return refs, values
