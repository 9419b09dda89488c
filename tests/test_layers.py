"""The layers point one way and no two project files import each other, directly or round a loop.

Read from the source with `ast`, so the rule holds for imports inside functions too (those hide cycles that
only show at run time). Layers, bottom first: core, messages (with schemas), harvesters, exporters (the harvest and
export engines), platforms (a room per platform, none importing another), and the top, `swath/`, in three floors
known by name: "store" (swath/store); "shared", what the front ends share (swath/shared and the other modules of
swath/: requester, scheduler, monitor, worker services, ...; the issue calls it the services floor, but
swath/services.py already names the worker services); and the front ends side by side, "cli" (swath/cli.py,
swath/commands), "web" and "dashboard", none of which imports another.
A module may import its own layer and those below.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder -> (package it installs as, rank; a module may import ranks <= its own)
FOLDERS = {"core": ("swath.core", 0), "schemas": ("swath.schemas", 1), "messages": ("swath.messages", 1),
           "harvesters": ("swath.harvesters", 2), "exporters": ("swath.exporters", 3),
           "platforms": ("swath.platforms", 4), "swath": ("swath", 5)}
# The floors of swath/, bottom first: floor -> the module prefixes it holds. A module of swath/ that no prefix
# names is on the "shared" floor. The front ends stand side by side on the top floor.
FLOORS: dict[str, tuple[str, ...]] = {"store": ("swath.store",), "shared": ("swath.shared",),
                                      "cli": ("swath.cli", "swath.__main__", "swath.commands"),
                                      "web": ("swath.web",), "dashboard": ("swath.dashboard",)}
FRONT_ENDS = ("cli", "web", "dashboard")
# the floors rank above every folder below swath/ (a module of swath/ takes its floor's rank, never its folder's)
_BELOW = max(rank for package, rank in FOLDERS.values() if package != "swath")
FLOOR_RANK = {"store": _BELOW + 1, "shared": _BELOW + 2, **{end: _BELOW + 3 for end in FRONT_ENDS}}
# `swath web` and `swath dashboard` start those front ends (and make the web's accounts): the only crossings
LAUNCHES = {("swath.commands.web", "swath.web.app"), ("swath.commands.web", "swath.web.auth"),
            ("swath.commands.dashboard", "swath.dashboard.server")}


def floor_of(module: str) -> str | None:
    """The floor of a module of swath/ ("store", "shared", "cli", "web", "dashboard"); None below swath/."""
    lower = tuple(f"{package}." for package, _ in FOLDERS.values() if package != "swath")
    if not (module + ".").startswith("swath.") or (module + ".").startswith(lower):
        return None
    named = (floor for floor, prefixes in FLOORS.items() for prefix in prefixes
             if (module + ".").startswith(prefix + "."))
    return next(named, "shared")


def front_end(module: str) -> str | None:
    floor = floor_of(module)
    return floor if floor in FRONT_ENDS else None


def rank_of(module: str, folder_rank: int) -> int:
    floor = floor_of(module)
    return FLOOR_RANK[floor] if floor else folder_rank


def project_modules() -> dict[str, tuple[Path, int]]:
    found: dict[str, tuple[Path, int]] = {}
    for folder, (package, rank) in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = [p for p in path.relative_to(ROOT / folder).with_suffix("").parts if p != "__init__"]
            name = ".".join([package, *parts])
            found[name] = (path, rank_of(name, rank))
    return found


def imported_names(module: str, path: Path) -> Iterator[str]:
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1]) if node.level else ""
            target = ".".join(p for p in (base, node.module or "") if p)
            yield target
            yield from (f"{target}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, (path, _) in modules.items():
        for target in imported_names(name, path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # importing a package's own parent is how Python loads it, not a dependency
            if target and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def test_every_import_points_down_or_sideways():
    modules = project_modules()
    upward = sorted(f"{name} imports {target}" for name, targets in import_graph().items() for target in targets
                    if modules[target][1] > modules[name][1])
    assert upward == [], "a lower layer imports a higher one:\n" + "\n".join(upward)


def test_front_ends_import_no_other_front_end():
    crossings = sorted(f"{name} ({front_end(name)}) imports {target} ({front_end(target)})"
                       for name, targets in import_graph().items() for target in targets
                       if front_end(name) and front_end(target) and front_end(name) != front_end(target)
                       and (name, target) not in LAUNCHES)
    assert crossings == [], ("the CLI, the web application and the dashboard share code through the shared floor "
                             "(swath/shared, swath/*.py), never by importing one another:\n" + "\n".join(crossings))


def test_the_floors_of_swath_are_known_by_name():
    modules = project_modules()
    where = {name: floor_of(name) for name in ("swath.store.repo", "swath.shared.records", "swath.requester",
                                               "swath.services", "swath.cli", "swath.commands.jobs",
                                               "swath.web.app", "swath.dashboard.server", "swath.core.config")}
    assert where == {"swath.store.repo": "store", "swath.shared.records": "shared", "swath.requester": "shared",
                     "swath.services": "shared", "swath.cli": "cli", "swath.commands.jobs": "cli",
                     "swath.web.app": "web", "swath.dashboard.server": "dashboard", "swath.core.config": None}
    rank = {floor: modules[name][1] for name, floor in where.items() if floor}
    assert _BELOW < rank["store"] < rank["shared"] < rank["cli"] == rank["web"] == rank["dashboard"]
    # every module of swath/ has a floor, and each named prefix still holds a module (no stale name)
    assert all(floor_of(name) for name in modules if modules[name][0].is_relative_to(ROOT / "swath"))
    assert all(any((name + ".").startswith(prefix + ".") for name in modules)
               for prefixes in FLOORS.values() for prefix in prefixes)
    assert all(target in import_graph()[name] for name, target in LAUNCHES)  # no stale exception


def test_a_front_end_importing_another_would_be_seen():
    # the rule's own check: a web module importing a CLI helper is a crossing, a launch is not, shared is fine
    assert (front_end("swath.web.routes_runs"), front_end("swath.commands.common")) == ("web", "cli")
    assert front_end("swath.shared.records") is None and front_end("swath.scheduler") is None
    assert ("swath.web.routes_runs", "swath.commands.common") not in LAUNCHES


def test_no_import_cycles():
    graph = import_graph()
    cycles, seen = [], set()
    for start in sorted(graph):
        # every path from start; a path that comes back to start is a cycle (the graph is small)
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in sorted(graph[node]):
                if nxt == start and frozenset(path) not in seen:
                    seen.add(frozenset(path))
                    cycles.append(" -> ".join([*path, start]))
                elif nxt not in path and nxt > start:
                    stack.append((nxt, [*path, nxt]))
    assert cycles == [], "import cycles:\n" + "\n".join(cycles)


def test_the_graph_sees_real_imports():
    graph = import_graph()
    assert "swath.core.config" in graph["swath.core.jobs"]
    assert "swath.messages.codes" in graph["swath.harvesters.errors"]


def declaration_modules() -> list[str]:
    """A platform's declaration: `declaration.py` in its room (or a module named `*declaration` anywhere else, which
    test_every_platform_is_in_its_room refuses)."""
    return [name for name in project_modules() if name.rpartition(".")[2].endswith("declaration")]


def test_declarations_import_only_the_core():
    # what finds, checks and lists types imports the declarations: one importing its harvester (or anything
    # that does) would load the platform's client library for a lookup
    modules = project_modules()
    found = declaration_modules()
    assert "swath.platforms.twitter.declaration" in found
    wider = sorted(f"{name} imports {target}" for name in found for target in imported_names(name, modules[name][0])
                   if target.split(".")[0] not in {*sys.stdlib_module_names, "__future__"}
                   and not (target + ".").startswith("swath.core."))
    assert wider == [], "a declaration imports more than the core and the standard library:\n" + "\n".join(wider)


# In a fresh interpreter (this one has loaded click for other tests): every module of the web application, the
# dashboard and the shared floor (swath/shared and swath/*.py) imported, the web app built and asked for pages,
# the dashboard served and asked for its page and its JSON; then no click and nothing of the CLI may be loaded.
FRONT_ENDS_AT_RUN_TIME = """
import importlib, pkgutil, sys, urllib.request
import swath, swath.dashboard, swath.shared, swath.web
for package in (swath.web, swath.dashboard, swath.shared):
    for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        importlib.import_module(info.name)
for info in pkgutil.iter_modules(swath.__path__):  # the shared floor's modules in swath/ itself
    if not info.ispkg and info.name not in ("cli", "__main__"):
        importlib.import_module(f"swath.{info.name}")
from starlette.testclient import TestClient
from swath.core.config import Config
from swath.dashboard.server import Dashboard
from swath.store import Store
from swath.web.app import create_app

config = Config.from_env()
store = Store(url=config.db_url)
with TestClient(create_app(config=config, store=store)) as client:
    statuses = [client.get(path).status_code for path in ("/healthz", "/login", "/")]
dashboard = Dashboard(config=config, store=store, port=0).start()
try:
    statuses += [urllib.request.urlopen(dashboard.url + path, timeout=60).status for path in ("", "api/status")]
finally:
    dashboard.close()
print(statuses)
print(sorted(m for m in sys.modules if m.partition(".")[0] == "click" or m == "swath.cli"
             or m.startswith("swath.commands")))
"""


def test_the_web_app_and_the_dashboard_load_no_cli_at_run_time(tmp_path):
    env = {**os.environ, "SWATH_DATA_ROOT": str(tmp_path / "data"),
           "SWATH_DB_URL": f"sqlite:///{tmp_path / 'swath.sqlite'}"}
    done = subprocess.run([sys.executable, "-c", FRONT_ENDS_AT_RUN_TIME], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    statuses, loaded = done.stdout.strip().splitlines()[-2:]
    assert statuses == "[200, 200, 200, 200, 200]"  # the pages were served: the probe ran the apps
    assert loaded == "[]", f"the web app, the dashboard or the shared floor loaded click or the CLI: {loaded}"


def room_of(module: str) -> str | None:
    """`swath.platforms.mastodon.harvester` -> `swath.platforms.mastodon`; None outside the rooms."""
    parts = module.split(".")
    return ".".join(parts[:3]) if parts[:2] == ["swath", "platforms"] and len(parts) > 2 else None


def public_of_room(module: str) -> bool:
    """A room's `public` module: the functions it offers a front end's command (META-SHARE's node for the CLI)."""
    room = room_of(module)
    return room is not None and module == f"{room}.public"


def test_nothing_outside_a_room_imports_it():
    # the engines (ranks below) never do; nor does another room or the shared floor: a platform is found through
    # its entry point (swath.core.discovery), and its harvester and tables through its declaration's targets.
    # A front end (the top floor) may import a room's `public` module, and nothing else of it.
    outside = sorted(f"{name} imports {target}" for name, targets in import_graph().items() for target in targets
                     if room_of(target) and room_of(name) != room_of(target)
                     and not (front_end(name) and public_of_room(target)))
    assert outside == [], "a module outside a platform's room imports it:\n" + "\n".join(outside)
    assert room_of("swath.platforms.mastodon.harvester") in {room_of(n) for n in import_graph()}
    assert "swath.platforms.metashare.public" in import_graph()["swath.commands.metashare"]  # the one kind of crossing


def test_a_room_imported_past_its_public_module_would_be_seen():
    # the rule's own check: the CLI importing a room's server, or an engine or the shared floor its public module
    assert public_of_room("swath.platforms.metashare.public") and not public_of_room("swath.platforms.metashare.server")
    assert front_end("swath.commands.metashare") == "cli" and not public_of_room("swath.platforms.public")
    assert front_end("swath.harvesters.run") is None and front_end("swath.requester") is None


TARGET = re.compile(r"^swath\.[\w.]+:[A-Za-z_]\w*$")  # "module:Attribute", as swath.core.platforms reads it


def target_strings(path: Path) -> Iterator[str]:
    """The "swath.module:Attribute" strings a module holds (a declaration's harvester, backend and item sources)."""
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and TARGET.match(node.value):
            yield node.value



def test_the_engines_name_no_platform_even_in_strings():
    # a "module:Class" string is an import that runs later: an engine holding one would depend on a platform
    modules = project_modules()
    named = sorted(f"{name} names {target}" for name, (path, rank) in modules.items() if rank <= FOLDERS["exporters"][1]
                   for target in target_strings(path) if room_of(target.partition(":")[0]))
    assert named == [], "an engine names a platform's module:\n" + "\n".join(named)


def test_every_platform_is_in_its_room():
    # issue #34's move is complete: each entry point names `swath.platforms.<name>.declaration`, and no declaration
    # (nor anything it names) is left in the engines' folders
    entry_points = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["project"]["entry-points"]
    elsewhere = sorted(f"{name} = {target}" for name, target in entry_points["swath.platforms"].items()
                       if target != f"swath.platforms.{name}.declaration:PLATFORM")
    assert elsewhere == [], "a platform declared outside its room:\n" + "\n".join(elsewhere)
    strays = sorted(name for name in declaration_modules() if name != f"{room_of(name)}.declaration")
    assert strays == [], "a declaration outside a room's declaration.py:\n" + "\n".join(strays)


def test_a_declaration_names_modules_that_exist_and_a_room_only_its_own():
    modules = project_modules()
    wrong = []
    for name in declaration_modules():
        for target in target_strings(modules[name][0]):
            module = target.partition(":")[0]
            if module not in modules:
                wrong.append(f"{name} names {target}: no such module")
            elif room_of(name) and room_of(module) != room_of(name):
                wrong.append(f"{name} names {target}, outside its room")
    assert wrong == [], "\n".join(wrong)
    assert "swath.platforms.mastodon.declaration" in declaration_modules()
