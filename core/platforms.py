"""A platform's facts, declared once: `PLATFORM = Platform(...)` in its declaration module, named in pyproject.toml.

A declaration module holds data only and imports only the core (tests/test_layers.py): finding a type, checking
a message or listing the types never imports a platform's harvester, exporter or client library; those are the
"module:Class" strings below, imported when a harvest or export of the type runs.

Everything that used to repeat them is derived from these declarations: the harvest and export registries,
the worker services, the `SWATH_<PLATFORM>_API_URL` settings, docker-compose.yml and docs/platforms.md
(`python -m swath.generate`). `swath.core.discovery` finds the declarations through entry points.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypedDict, TypeVar

from swath.core.config import Config, api_url_env
from swath.core.jsontypes import JSON, JSONObject

_V = TypeVar("_V")

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")  # a routing-key part and a worker-name prefix
_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")  # "module:Attribute"


class BadDeclaration(ValueError):
    """A platform declaration that cannot work (caught when its module is imported)."""


class OptionSchema(TypedDict, total=False):
    """One option's JSON Schema, in the keywords the declarations use (what the forms and docs read)."""

    type: str | list[str]
    title: str
    description: str
    default: JSON
    enum: list[JSON]
    items: OptionSchema
    minimum: int | float
    maximum: int | float
    exclusiveMinimum: int | float
    maxItems: int
    pattern: str
    format: str  # checked: messages/settings.py FORMATS


class OptionsSchema(TypedDict, total=False):
    """The JSON Schema of a harvest's `options` (`options()` builds one): an object of named options."""

    type: str
    properties: dict[str, OptionSchema]
    additionalProperties: bool
    patternProperties: dict[str, OptionSchema]


SEED_TOKENS = ("text", "url", "none")  # what a seed token must be: anything the platform reads, an http(s) URL, absent


@dataclass(frozen=True, kw_only=True)
class Seeds:
    """What one harvest type reads from its seeds: checked at `swath harvest create` and in harvest.start."""

    token: str = "text"  # one of SEED_TOKENS
    required: bool = True  # at least one seed
    # seeds `swath harvest example` prints; a "url" type's token is replaced by the platform's API root when set
    example: tuple[JSONObject, ...] = ()
    max_length: int = 2000  # a text token's characters at most (a platform's query limit when it has one)


@dataclass(frozen=True, kw_only=True)
class HarvestKind:
    """One harvest type: the message's `type`, the Harvester method that runs it."""

    name: str
    method: str
    # may stream: the worker runs such types concurrently; each message's Harvester.is_stream(start) decides
    stream: bool = False
    seeds: Seeds = field(default_factory=Seeds)
    # how SFM 3.x names the type in routing keys (messages/routing.py sfm_keys): the platform it puts there when
    # not this one (sfm-ui Collection.HARVEST_TYPES_TO_PLATFORM), and whether its harvest.start may end in
    # `.priority` (sfm-ui PRIORITY_HARVEST_TYPES: collections scheduled at most hourly)
    sfm_platform: str = ""
    sfm_priority: bool = False


@dataclass(frozen=True, kw_only=True)
class ExportKind:
    """One export type (SFM's harvest type names, so SFM requesters work unchanged)."""

    name: str
    # "module:Class" of exporters.items.Source; a response is read by the first whose URL markers match, and
    # the first is the primary table (Twitter types read both API versions)
    sources: tuple[str, ...]
    # tables of the current state (datasets, LRs, Xesam payloads): the latest copy of each item only,
    # deletions left out, whatever the export's `dedupe` says
    current_state: bool = False
    # for docs/exporting.md's table (python -m swath.generate): the responses it reads, and a note on its table
    reads: str = ""
    table_note: str = ""


@dataclass(frozen=True, kw_only=True)
class RetiredKind:
    """A harvest type SFM had whose platform API is gone: refused with `api_retired`, naming what to use instead
    (messages/retired.py); its old WARCs still export under the export type of that name."""

    name: str
    gone: str  # what went away, for the refusal: "Weibo's open API for topic searches"
    use: str = ""  # the harvest type to use instead; empty: none
    priority: bool = False  # SFM 2.x sent it with `.priority` too (PRIORITY_HARVEST_TYPES)


@dataclass(frozen=True, kw_only=True)
class Platform:
    """What swath knows about one platform; names stay as SFM and the routing keys have them."""

    name: str  # routing-key platform: harvest.start.<name>.<type>; workers <name>_harvester, <name>_exporter
    title: str  # for people: "OAI-PMH"; the service names default to "<title> Harvester" / "<title> Exporter"
    harvester: str = ""  # "module:Class" of its Harvester; empty for an export-only platform
    harvest_types: tuple[HarvestKind, ...] = ()
    export_types: tuple[ExportKind, ...] = ()
    harvester_service: str = ""  # status messages' "service"; set only where it is not "<title> Harvester"
    exporter_service: str = ""
    api_url: str = ""  # the API root by default; SWATH_<NAME>_API_URL replaces it (compatible services, tests)
    api_about: str = ""  # what that root serves, for docs/configuration.md's table (python -m swath.generate)
    backend: str = ""  # "module:Class" of its harvesters.backends.Backend, for a metadata-protocol platform
    # JSON Schema of the harvest.start `options` it reads (checked at `harvest create` and in harvest.start);
    # empty: not declared, anything goes
    options: OptionsSchema = field(default_factory=lambda: OptionsSchema())
    # the credential names a harvest needs: any one of these sets, every name in it (empty: none needed)
    credentials: tuple[tuple[str, ...], ...] = ()
    # credential names whose value names an account rather than proves it (a handle, a user name, an e-mail
    # used to log in): public data, never masked in what is archived. Every other credential is a secret, so a
    # name a declaration does not know is one (docs/security.md "What is a secret")
    login_names: tuple[str, ...] = ()
    # the stable status codes only this platform gives: code -> what it means. messages/codes.py holds them as
    # constants, written there by `python -m swath.generate` (so consumers and mypy see one list of codes)
    codes: dict[str, str] = field(default_factory=dict)
    # the client libraries (top-level modules) its harvester or tables load when they run: nothing that finds,
    # checks or lists types may load them (tests/test_layers_runtime.py reads this)
    clients: tuple[str, ...] = ()
    # SFM's harvest types of this platform whose API is gone: a worker answers their start keys with api_retired
    retired_types: tuple[RetiredKind, ...] = ()

    def __post_init__(self) -> None:
        problems = _problems(self)
        if problems:
            raise BadDeclaration(f"platform {self.name!r}: " + "; ".join(problems))
        # frozen: the derived defaults are filled in once, here
        if self.harvest_types and not self.harvester_service:
            object.__setattr__(self, "harvester_service", f"{self.title} Harvester")
        if self.export_types and not self.exporter_service:
            object.__setattr__(self, "exporter_service", f"{self.title} Exporter")

    @property
    def harvest_methods(self) -> dict[str, str]:
        """Harvest type -> method name: what `Harvester.types` holds."""
        return {kind.name: kind.method for kind in self.harvest_types}

    @property
    def stream_types(self) -> frozenset[str]:
        """The types that may stream: what `Harvester.stream_types` holds."""
        return frozenset(kind.name for kind in self.harvest_types if kind.stream)

    @property
    def api_url_env(self) -> str:
        return api_url_env(self.name)

    def api_root(self, config: Config) -> str:
        """The API root this deployment talks to: SWATH_<NAME>_API_URL if set, else the declared default."""
        return config.api_urls.get(self.name) or self.api_url

    def secret_credentials(self, credentials: Mapping[str, _V]) -> dict[str, _V]:
        """The credentials that authenticate (passwords, tokens, keys): all but the login names."""
        return {name: value for name, value in credentials.items() if name not in self.login_names}

    def harvest_kind(self, name: str) -> HarvestKind | None:
        return next((kind for kind in self.harvest_types if kind.name == name), None)

    def export_kind(self, name: str) -> ExportKind | None:
        return next((kind for kind in self.export_types if kind.name == name), None)


# option schemas (and texts) more than one platform declares, here (the core) so a declaration need not import
# the engine that reads them: `dryrun` harvesters/backends.py, `continue_cursor` harvesters/streams.py
DRYRUN_OPTION: OptionSchema = {"type": "boolean", "title": "Dry run",
                               "description": "list and map everything, write nothing"}
# what the metadata backends' export types read (docs/exporting.md)
DATASET_RECORDS = "swath's dataset `resource` records of that backend"
CONTINUE_CURSOR_OPTION: OptionSchema = {
    "type": "boolean", "description": "streams with a cursor: a new harvest continues from the collection's last "
                                      "committed cursor (default); false starts from now"}

# keys SFM's UI puts in `harvest_options` (sfm-ui forms, 1.x to 2.x) that swath does not read
SFM_UI_OPTIONS = ("media", "web_resources", "user_images", "tweets", "deactivate_not_found_seeds",
                  "deactivate_unauthorized_seeds", "deactivate_suspended_seeds")


def options(**properties: OptionSchema) -> OptionsSchema:
    """A JSON Schema for harvest options: an object with these properties and no other key (a typo is refused)."""
    return {"type": "object", "properties": properties, "additionalProperties": False}


def with_sfm_ui_keys(schema: OptionsSchema) -> OptionsSchema:
    """`schema` letting SFM_UI_OPTIONS through too (any value), so an SFM requester's messages stay valid; a
    pattern, not properties: they are not swath's options and stay out of docs/platforms.md."""
    return {**schema, "patternProperties": {f"^({'|'.join(SFM_UI_OPTIONS)})$": {}}}


def _problems(p: Platform) -> list[str]:
    problems = []
    if not _NAME.match(p.name):
        problems.append("name must be lower-case letters, digits and '_', starting with a letter")
    if not (p.harvest_types or p.export_types):
        problems.append("declares no harvest or export type")
    if bool(p.harvest_types) != bool(p.harvester):
        problems.append("harvest types and a harvester class go together")
    for label, names in (("harvest", [k.name for k in p.harvest_types]), ("export", [k.name for k in p.export_types])):
        problems += [f"type {name!r} is not a valid routing-key part" for name in names if not _NAME.match(name)]
        if len(set(names)) != len(names):
            problems.append(f"a {label} type is declared twice")
    targets = [p.harvester, p.backend, *(s for kind in p.export_types for s in kind.sources)]
    problems += [f"{t!r} is not 'module:Attribute'" for t in targets if t and not _TARGET.match(t)]
    if any(not kind.sources for kind in p.export_types):
        problems.append("an export type needs at least one item source")
    if p.api_url and not p.api_url.startswith(("http://", "https://")):
        problems.append("api_url must be an http(s) URL")
    if p.api_url and not p.api_about:
        problems.append("api_url needs api_about: what the root serves (docs/configuration.md's table)")
    if p.options and p.options.get("type") != "object":
        problems.append("options must be a JSON Schema of type object")
    problems += [f"type {k.name!r}: seed token must be one of {', '.join(SEED_TOKENS)}"
                 for k in p.harvest_types if k.seeds.token not in SEED_TOKENS]
    if any(not names or not all(names) for names in p.credentials):
        problems.append("each credential set names at least one credential")
    problems += [f"code {c!r} must be lower-case letters, digits and '_'" for c in p.codes if not _NAME.match(c)]
    problems += [f"code {code!r} needs a meaning" for code, about in p.codes.items() if not about.strip()]
    harvest_names = {k.name for k in p.harvest_types}
    problems += [f"retired type {k.name!r} is a harvest type too" for k in p.retired_types if k.name in harvest_names]
    problems += [f"retired type {k.name!r} is not a valid routing-key part" for k in p.retired_types
                 if not _NAME.match(k.name)]
    if not all(p.login_names):
        problems.append("a login name cannot be empty")
    return problems
