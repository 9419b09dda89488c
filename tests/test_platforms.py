"""The platform declarations: each written once, found through entry points, and what is derived from them."""

from __future__ import annotations

import importlib
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import jsonschema
import pytest

from swath.core import discovery
from swath.core.config import Config
from swath.core.platforms import BadDeclaration, ExportKind, HarvestKind, Platform, RetiredKind
from swath.exporters import registry as export_registry
from swath.exporters.items import Source
from swath.harvesters import registry
from swath.harvesters.backend_plugins import describe_backends, installed_backends
from swath.harvesters.backends import Backend
from swath.harvesters.base import Harvester
from swath.services import all_services, service
from tests.entrypoints import install_entry_points

ROOT = Path(__file__).resolve().parents[1]
OPTION_READ = re.compile(r"""\b(?:options|opts)(?:\.get\(|\[)\s*["'](\w+)["']""")


def builtins() -> list[Platform]:
    return [p for p in discovery.platforms() if discovery.builtin(p.name)]


def test_pyproject_names_every_builtin_platform_once_and_each_loads_under_its_own_name():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["swath.platforms"]
    installed = {name: ep.value for name, ep in discovery.installed().items() if discovery.builtin(name)}
    assert installed == declared  # the editable install sees pyproject's lines (dev/setup.sh reinstalls)
    assert [p.name for p in builtins()] == sorted(declared)


def test_each_room_is_one_platform_whose_entry_point_is_its_declaration():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["swath.platforms"]
    rooms = sorted(path.parent.name for path in (ROOT / "platforms").glob("*/__init__.py"))
    assert rooms and all(declared.get(room) == f"swath.platforms.{room}.declaration:PLATFORM" for room in rooms)
    assert all(discovery.load(room).name == room for room in rooms)


def test_no_type_is_declared_by_two_platforms():
    for kinds in (lambda p: p.harvest_types, lambda p: p.export_types):
        names = [kind.name for p in discovery.platforms() for kind in kinds(p)]
        assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def test_each_harvester_class_takes_its_facts_from_its_declaration():
    for platform in builtins():
        for htype in registry.platform_types(platform):
            cls = htype.load()  # also checks types and streams agree
            assert issubclass(cls, Harvester)
            assert (cls.platform, cls.service) == (platform.name, platform.harvester_service)
            assert (cls.types, cls.stream_types) == (platform.harvest_methods, platform.stream_types)
            assert callable(getattr(cls, cls.types[htype.name]))
            assert registry.lookup(htype.name) == htype


def test_each_export_type_resolves_to_item_sources_and_the_declared_service():
    for platform in builtins():
        for kind in platform.export_types:
            export = export_registry.lookup(kind.name)
            assert (export.platform, export.service, export.current_state) == \
                (platform.name, platform.exporter_service, kind.current_state)
            assert all(issubclass(source, Source) for source in export.sources) and export.primary_table
    with pytest.raises(export_registry.UnknownExportType):
        export_registry.lookup("no_such_export_type")


def test_a_backend_platform_declares_its_backend_and_it_is_listed_as_built_in():
    backend_platforms = [p for p in builtins() if p.backend]
    assert {p.name for p in backend_platforms} >= {"oai_pmh", "dcat", "ckan", "opendatasoft"}
    rows = {row["name"]: row for row in describe_backends()}
    for platform in backend_platforms:
        module, _, name = platform.backend.partition(":")
        backend = getattr(importlib.import_module(module), name)
        assert issubclass(backend, Backend) and (backend.name, backend.display_name) == (platform.name, platform.title)
        assert installed_backends()[platform.name] == platform.backend and rows[platform.name]["origin"] == "built-in"
        assert registry.lookup(platform.name).load().backend is backend  # the declared type, not a plugin


def test_option_schemas_are_json_schema_and_name_every_option_the_code_reads():
    backend_source = Path(importlib.util.find_spec("swath.harvesters.backends").origin).read_text()
    for platform in builtins():
        if not platform.harvest_types:
            continue
        schema = platform.options or {"type": "object", "properties": {}}
        jsonschema.validators.validator_for(schema).check_schema(schema)
        module = platform.harvester.partition(":")[0]
        read = set(OPTION_READ.findall(Path(importlib.util.find_spec(module).origin).read_text()))
        if platform.backend:
            read |= set(OPTION_READ.findall(backend_source))
        assert read <= set(schema["properties"]), (platform.name, read - set(schema["properties"]))
        jsonschema.validate({}, schema)  # no options at all is always fine


def test_api_roots_come_from_the_declaration_or_the_derived_variable():
    with_api = {p.name: p for p in builtins() if p.api_url}
    # the variable follows from the name, so a new platform needs no entry here (docs: python -m swath.generate)
    assert all(p.api_url_env == f"SWATH_{name.upper()}_API_URL" for name, p in with_api.items())
    default = Config.from_env({})
    moved = Config.from_env({"SWATH_TUMBLR_API_URL": "http://127.0.0.1:9/", "SWATH_TWITTER_API_URL": ""})
    for name, platform in with_api.items():
        assert platform.api_root(default) == platform.api_url
        assert platform.api_root(moved) == ("http://127.0.0.1:9" if name == "tumblr" else platform.api_url)
    assert with_api["flickr"].api_root(default.with_api_url("flickr", "http://127.0.0.1:8/")) == "http://127.0.0.1:8"
    with pytest.raises(SystemExit, match="SWATH_FLICKR_API_URL must be an http"):
        Config.from_env({"SWATH_FLICKR_API_URL": "ftp://example.org"})


def test_running_one_platform_imports_no_other_platform():
    code = """
import json, sys
from swath.exporters.registry import lookup as export_lookup
from swath.harvesters.registry import lookup
from swath.services import service
lookup("tumblr_blog_posts").load()
export_lookup("tumblr_blog_posts")
print(json.dumps([service("tumblr_harvester").service, service("tumblr_exporter").service,
                  sorted(m for m in sys.modules if m.startswith(("swath.harvesters.", "swath.platforms."))
                         or m in ("twarc", "flickrapi"))]))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120).stdout
    harvester, exporter, modules = json.loads(out)
    assert (harvester, exporter) == ("Tumblr Harvester", "Tumblr Exporter")
    others = [p.harvester.partition(":")[0] for p in builtins() if p.harvester and p.name != "tumblr"]
    assert not set(others) & set(modules) and not {"twarc", "flickrapi"} & set(modules), modules
    assert "swath.platforms.tumblr.harvester" in modules
    # of the rooms, only Tumblr's modules beyond the declarations (and their packages) are loaded
    rooms = {m.split(".")[2] for m in modules
             if m.startswith("swath.platforms.") and m.count(".") > 2 and not m.endswith(".declaration")}
    assert rooms == {"tumblr"}, modules


TOY = Platform(name="swath_test_toy", title="Toy", harvester="tests.test_platforms:ToyHarvester",
               harvest_types=(HarvestKind(name="swath_test_toy_pages", method="pages"),
                              HarvestKind(name="swath_test_toy_live", method="pages", stream=True)),
               export_types=(ExportKind(name="swath_test_toy_pages",
                                        sources=("swath.platforms.tumblr.exporter:Tumblr",)),))
MISNAMED = Platform(name="swath_test_other", title="Other", export_types=TOY.export_types)


class ToyHarvester(Harvester, declaration=TOY):
    def pages(self) -> None:
        """Harvests nothing: only the registries are under test here."""


class HandSetToyHarvester(Harvester):
    """A third-party platform written before `declaration=`: it sets the four facts by hand."""

    platform = "swath_test_hand"
    service = "Hand Harvester"
    types = {"swath_test_hand_pages": "pages"}
    stream_types = frozenset({"swath_test_hand_pages"})


class OwnServiceToyHarvester(Harvester, declaration=TOY):
    service = "Own Name"  # what the class sets itself wins over the declaration


def test_a_declaration_fills_the_class_facts_and_hand_set_ones_keep_working():
    assert (ToyHarvester.platform, ToyHarvester.service) == ("swath_test_toy", "Toy Harvester")
    assert ToyHarvester.types == {"swath_test_toy_pages": "pages", "swath_test_toy_live": "pages"}
    assert ToyHarvester.stream_types == frozenset({"swath_test_toy_live"})
    assert (HandSetToyHarvester.platform, HandSetToyHarvester.service) == ("swath_test_hand", "Hand Harvester")
    assert HandSetToyHarvester.types == {"swath_test_hand_pages": "pages"}
    assert HandSetToyHarvester.stream_types == frozenset({"swath_test_hand_pages"})
    assert (OwnServiceToyHarvester.service, OwnServiceToyHarvester.types) == ("Own Name", ToyHarvester.types)
    assert not Harvester.stream_types and not hasattr(Harvester, "platform")  # the base is left as it was


def test_a_third_party_platform_joins_every_derived_list_and_a_broken_one_hides_nothing(tmp_path, monkeypatch, caplog):
    install_entry_points(tmp_path, monkeypatch, {"swath.platforms": {
        TOY.name: "tests.test_platforms:TOY",
        "swath_test_missing": "no_such_module_for_swath:PLATFORM",
        "swath_test_misnamed": "tests.test_platforms:MISNAMED",
    }})
    htypes = {t.name: t for t in registry.harvester_types()}
    assert htypes["swath_test_toy_live"].stream and htypes["swath_test_toy_pages"].load() is ToyHarvester
    assert "swath_test_toy_pages" in export_registry.export_types()
    assert export_registry.start_routing_key("swath_test_toy_pages") == \
        "export.start.swath_test_toy.swath_test_toy_pages"
    services = all_services()
    assert services["swath_test_toy_harvester"].service == "Toy Harvester"
    assert services["swath_test_toy_harvester"].concurrency > 1  # it has a type that may stream
    assert services["swath_test_toy_exporter"].bindings == ["export.start.swath_test_toy.*"]
    assert service("swath_test_toy_harvester").bindings == services["swath_test_toy_harvester"].bindings
    assert not {name for name in services if "missing" in name or "misnamed" in name or "other" in name}
    assert {t.name for p in builtins() for t in registry.platform_types(p)} <= set(htypes)  # nothing hidden
    for name, why in (("swath_test_missing", "ModuleNotFoundError"), ("swath_test_misnamed", "names itself")):
        with pytest.raises(discovery.PlatformUnavailable, match=why):
            discovery.load(name)
        assert any(name in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(("fields", "why"), [
    ({"name": "Bad-Name", "export_types": TOY.export_types}, "name must be"),
    ({"name": "x", "harvest_types": TOY.harvest_types}, "harvest types and a harvester class go together"),
    ({"name": "x"}, "declares no harvest or export type"),
    ({"name": "x", "export_types": (*TOY.export_types, *TOY.export_types)}, "declared twice"),
    ({"name": "x", "export_types": (ExportKind(name="x", sources=()),)}, "at least one item source"),
    ({"name": "x", "export_types": TOY.export_types, "options": {"type": "array"}}, "JSON Schema of type object"),
    ({"name": "x", "export_types": TOY.export_types, "api_url": "api.example.org"}, "http"),
    ({"name": "x", "export_types": TOY.export_types, "api_url": "https://api.example.org"}, "api_url needs api_about"),
    ({"name": "x", "export_types": TOY.export_types, "login_names": ("",)}, "login name cannot be empty"),
    ({"name": "x", "export_types": TOY.export_types, "codes": {"X-Y": "why"}}, "code 'X-Y' must be"),
    ({"name": "x", "export_types": TOY.export_types, "codes": {"x_gone": " "}}, "code 'x_gone' needs a meaning"),
    ({"name": "x", "harvester": "m:C", "harvest_types": TOY.harvest_types,
      "retired_types": (RetiredKind(name="swath_test_toy_pages", gone="its API"),)}, "is a harvest type too"),
])
def test_a_declaration_that_cannot_work_fails_when_its_module_is_imported(fields, why):
    with pytest.raises(BadDeclaration, match=why):
        Platform(title="X", **fields)
