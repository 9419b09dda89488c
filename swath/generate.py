"""Rewrite what is derived from the platform declarations: compose workers, platform docs, API root lists, codes.

    python -m swath.generate            # rewrite every generated part (PARTS) in this checkout
    python -m swath.generate --check    # exit 1 naming the stale files (tests/test_generated.py runs this)

Only the text between the marker lines is written; everything around it stays as people wrote it.
"""

from __future__ import annotations

import argparse
import re
import sys
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

from swath.core import discovery
from swath.core.platforms import ExportKind, OptionSchema, Platform

ROOT = Path(__file__).resolve().parents[1]  # the checkout (an editable install): a developer's tool
COMPOSE = "docker-compose.yml"
DOCS = "docs/platforms.md"
CONFIG = "docs/configuration.md"
HARVEST_TYPES = "docs/harvest-types.md"
CODES = "messages/codes.py"
EXPORTING = "docs/exporting.md"


def _md_markers(part: str) -> tuple[str, str]:
    return f"<!-- >>> {part}: written by `python -m swath.generate`, do not edit -->\n", f"<!-- <<< {part} -->\n"


COMPOSE_MARKERS = ("  # >>> worker services: written by `python -m swath.generate`, do not edit\n",
                   "  # <<< worker services\n")
CODES_MARKERS = ("# >>> platform codes: written by `python -m swath.generate`, do not edit\n", "# <<< platform codes\n")
DOCS_MARKERS = _md_markers("platforms")
API_TABLE_MARKERS = _md_markers("API roots")
API_LIST_MARKERS = _md_markers("API root list")
EXPORT_TABLE_MARKERS = _md_markers("export types")


class MissingMarkers(ValueError):
    """The file lost the lines that say where the generated part goes."""


class CodeClash(ValueError):
    """Two platforms, or a platform and messages/codes.py itself, declare the same code."""


def replace_between(text: str, markers: tuple[str, str], body: str, *, name: str) -> str:
    begin, end = markers
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise MissingMarkers(f"{name}: put the generated part between the lines {begin.strip()!r} and {end.strip()!r}")
    return text[: start + len(begin)] + body + text[stop:]


def compose_workers(names: Iterable[str]) -> str:
    """One service per worker, scalable with --scale (the `x-worker` anchor holds the rest)."""
    blocks = [f"  {name}:\n    <<: *worker\n    command: [\"worker\", \"{name}\"]\n" for name in names]
    return "\n".join(blocks)


def docs_tables(platforms: list[Platform]) -> str:
    rows = ["| Platform | Harvest types (workers) | Export types (workers) | API root |", "|---|---|---|---|"]
    for p in platforms:
        harvest = ", ".join(f"`{k.name}`" + (" (may stream)" if k.stream else "") for k in p.harvest_types)
        export = ", ".join(f"`{k.name}`" for k in p.export_types)
        api = f"`{p.api_url}` (`{p.api_url_env}`)" if p.api_url else "from the seeds" if p.harvest_types else "—"
        rows.append(f"| `{p.name}` {p.title} "
                    f"| {_with_worker(harvest, p.name, 'harvester', p.harvester_service)} "
                    f"| {_with_worker(export, p.name, 'exporter', p.exporter_service)} | {api} |")
    options = ["| Platform | Option | Type | Default | Meaning |", "|---|---|---|---|---|"]
    for p in platforms:
        for name, schema in p.options.get("properties", {}).items():
            default = f"`{_json(schema['default'])}`" if "default" in schema else ""
            options.append(f"| `{p.name}` | `{name}` | {_type(schema)} | {default} | {schema.get('description', '')} |")
    return "\n".join([*rows, "", "Harvest options (`options` of harvest.start) each platform reads:", "",
                      *options]) + "\n"


def api_table(platforms: list[Platform]) -> str:
    """docs/configuration.md: every variable that moves an API root, its default and what it replaces."""
    with_api = [p for p in platforms if p.api_url]
    rows = ["| Variable | Default | What it replaces |", "|---|---|---|"]
    rows += [f"| `{p.api_url_env}` | `{p.api_url}` | {p.api_about} |" for p in with_api]
    return "\n".join([f"`SWATH_<PLATFORM>_API_URL` replaces the API root of a platform that declares one "
                      f"(today {api_list(platforms)}).", "", *rows]) + "\n"


def api_list(platforms: list[Platform]) -> str:
    return ", ".join(f"`{p.api_url_env}`" for p in platforms if p.api_url)


def export_table(platforms: list[Platform], table_of: Callable[[str], str]) -> str:
    """docs/exporting.md: each platform's export types, those reading alike in one row, with their table."""
    rows = ["| type | platform | items read | table (columns) |", "| --- | --- | --- | --- |"]
    for p in platforms:
        groups: list[list[ExportKind]] = []
        for kind in p.export_types:
            if groups and _same_table(groups[-1][0], kind):
                groups[-1].append(kind)
            else:
                groups.append([kind])
        for group in groups:
            first = group[0]
            table = f"`{table_of(first.name)}`" + (" (current state)" if first.current_state else "")
            note = f": {first.table_note}" if first.table_note else ""
            types = ", ".join(f"`{k.name}`" for k in group)
            rows.append(f"| {types} | {p.name} | {first.reads or '—'} | {table}{note} |")
    return "\n".join(rows) + "\n"


def _same_table(a: ExportKind, b: ExportKind) -> bool:
    return (a.sources, a.reads, a.table_note, a.current_state) == (b.sources, b.reads, b.table_note, b.current_state)


def platform_codes(platforms: list[Platform], taken: Iterable[str] = ()) -> str:
    """messages/codes.py's part: each platform's own codes as constants (NAME = "name"), its meaning beside."""
    owner = dict.fromkeys(taken, "messages/codes.py")
    lines = []
    for p in platforms:
        if p.codes:
            lines.append(f"# --- {p.name} ---")
        for code, about in p.codes.items():
            if code in owner:
                raise CodeClash(f"code {code!r} of platform {p.name!r} is declared by {owner[code]} too")
            owner[code] = f"platform {p.name!r}"
            constant = f'{code.upper()} = "{code}"'
            # a meaning too long for the line goes above it, wrapped as the file's other comments are
            beside = f"{constant}  # {about}"
            lines += [beside] if len(beside) <= 120 else [*textwrap.wrap(about, 118, initial_indent="# ",
                                                                          subsequent_indent="# "), constant]
    return "".join(line + "\n" for line in lines)


def hand_written_codes(text: str, markers: tuple[str, str] = CODES_MARKERS) -> list[str]:
    """The codes messages/codes.py holds outside its generated part."""
    begin, end = text.find(markers[0]), text.find(markers[1])
    outside = text[:begin] + text[end:] if 0 <= begin < end else text
    return re.findall(r'^[A-Z][A-Z0-9_]* = "([a-z0-9_]+)"', outside, re.M)


def _with_worker(types: str, platform: str, role: str, service: str) -> str:
    return f"{types}<br>`{platform}_{role}`, \"{service}\"" if types else "—"


def _type(schema: OptionSchema) -> str:
    if "enum" in schema:
        return " or ".join(f"`{_json(v)}`" for v in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {schema.get('items', {}).get('type', 'any')}"
    return str(schema.get("type", "any"))


def _json(value: object) -> str:
    return "true" if value is True else "false" if value is False else str(value)


def parts() -> list[tuple[str, tuple[str, str], str]]:
    """Each generated part as (file, its markers, what goes between them); a file may hold several."""
    from swath.exporters.registry import lookup  # the tables' names are their item sources' (imported here only)
    from swath.services import all_services

    # the platforms that ship with swath (a plugin in the developer's environment is not the project's), loaded
    # strictly: one that does not load stops the generator instead of dropping out of the files it writes
    # (discovery.platforms() leaves it out, for the workers' sake)
    platforms = [discovery.load(name) for name in discovery.installed() if discovery.builtin(name)]
    taken = hand_written_codes((ROOT / CODES).read_text())
    return [(COMPOSE, COMPOSE_MARKERS, compose_workers(all_services(tuple(p.name for p in platforms)))),
            (CODES, CODES_MARKERS, platform_codes(platforms, taken)),
            (EXPORTING, EXPORT_TABLE_MARKERS, export_table(platforms, lambda name: lookup(name).primary_table)),
            (DOCS, DOCS_MARKERS, docs_tables(platforms)),
            (CONFIG, API_TABLE_MARKERS, api_table(platforms)),
            (HARVEST_TYPES, API_LIST_MARKERS,
             f"API roots: {api_list(platforms)} (see [configuration](configuration.md)).\n")]


def rendered(root: Path) -> dict[Path, str]:
    """Each generated file as it should read now."""
    texts: dict[Path, str] = {}
    for name, markers, body in parts():
        path = root / name
        texts[path] = replace_between(texts.get(path) or path.read_text(), markers, body, name=name)
    return texts


def stale(root: Path) -> list[Path]:
    return [path for path, text in rendered(root).items() if path.read_text() != text]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m swath.generate", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a file is not current")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: the one swath runs from)")
    args = parser.parse_args(argv)
    if args.check:
        old = stale(args.root)
        for path in old:
            print(f"{path} is not current: run python -m swath.generate", file=sys.stderr)
        return 1 if old else 0
    for path, text in rendered(args.root).items():
        if path.read_text() != text:
            path.write_text(text)
            print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
