"""Which metadata backends are installed: those the platforms declare (`Platform(backend=...)`) and every
`swath.backends` entry point (a plugin), loaded by name; `swath harvest backends` lists them.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from swath.core import discovery
from swath.harvesters.backends import Backend

ENTRY_POINT_GROUP = "swath.backends"


def load_backend(name: str) -> type[Backend]:
    """The backend class registered under `name` (a platform's or an entry point); LookupError if none."""
    target = installed_backends().get(name)
    if target is None:
        raise LookupError(f"no metadata backend named {name!r}; installed: {', '.join(installed_backends())}")
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise LookupError(f"{target} is not a harvesters.backends.Backend subclass")
    return cls


def installed_backends() -> dict[str, str]:
    """Backend name -> "module:Class": those the platforms declare plus every `swath.backends` entry point."""
    found = _declared_backends()
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.value)
    return dict(sorted(found.items()))


def _declared_backends() -> dict[str, str]:
    """A backend platform's backend is named after the platform (its harvest type)."""
    return {platform.name: platform.backend for platform in discovery.platforms() if platform.backend}


def describe_backends() -> list[dict[str, str]]:
    """One row per installed backend (for `swath harvest backends`): name, display name, class, origin.

    A declared backend's display name is its platform's title (tests/test_platforms.py holds them equal), so
    listing imports no platform module and its client library (rdflib for DCAT); a plugin is loaded to be named.
    """
    rows = []
    titles = {platform.name: platform.title for platform in discovery.platforms() if platform.backend}
    declared = _declared_backends()
    for name, target in installed_backends().items():
        builtin = declared.get(name) == target and discovery.builtin(name)
        row = {"name": name, "target": target, "origin": "built-in" if builtin else "entry point"}
        try:
            row["display_name"] = titles[name] if declared.get(name) == target else load_backend(name).display_name
            row["display_name"] = row["display_name"] or name
        except Exception as exc:  # a broken plugin is listed with its error, never hides the others
            row["display_name"], row["error"] = name, f"{type(exc).__name__}: {exc}"
        rows.append(row)
    return rows
