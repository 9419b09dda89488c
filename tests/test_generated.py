"""Every part `python -m swath.generate` writes (compose workers, platform docs, API root lists, export types, codes)
is current."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from swath import generate
from swath.core import discovery
from swath.core.platforms import ExportKind, Platform
from swath.services import all_services
from tests.entrypoints import install_entry_points

ROOT = Path(__file__).resolve().parents[1]


def test_the_generated_files_are_current():
    assert generate.stale(ROOT) == [], "run `python -m swath.generate` and commit the files it rewrote"


def copy_with_generated_parts_emptied(tmp_path: Path) -> Path:
    for name, markers, _ in generate.parts():
        target = tmp_path / name
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, target)
        target.write_text(generate.replace_between(target.read_text(), markers, "", name=name))
    return tmp_path


def test_the_generator_writes_a_worker_per_service_and_a_row_per_platform(tmp_path, capsys):
    root = copy_with_generated_parts_emptied(tmp_path)
    assert generate.main(["--check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    every = (generate.COMPOSE, generate.DOCS, generate.CONFIG, generate.HARVEST_TYPES, generate.CODES,
             generate.EXPORTING)
    assert {name for name, _, _ in generate.parts()} == {name for name in every if f"{name} is not current" in err}
    assert generate.main(["--root", str(root)]) == 0
    assert generate.main(["--check", "--root", str(root)]) == 0
    compose, docs = (root / generate.COMPOSE).read_text(), (root / generate.DOCS).read_text()
    config, harvest_types = (root / generate.CONFIG).read_text(), (root / generate.HARVEST_TYPES).read_text()
    codes, exporting = (root / generate.CODES).read_text(), (root / generate.EXPORTING).read_text()
    for name in all_services():
        assert f'  {name}:\n    <<: *worker\n    command: ["worker", "{name}"]\n' in compose
    for platform in discovery.platforms():
        assert f"| `{platform.name}` {platform.title} |" in docs
        assert all(f"`{kind.name}`" in docs for kind in (*platform.harvest_types, *platform.export_types))
        moved_by = f"`{platform.api_url_env}`"  # every declared API root is documented, and only those
        assert (f"| {moved_by} | `{platform.api_url}` | {platform.api_about} |" in config) == bool(platform.api_url)
        assert (moved_by in harvest_types) == bool(platform.api_url)
        assert all(f'{code.upper()} = "{code}"' in codes for code in platform.codes)
        assert all(f"`{kind.name}`" in exporting and f"| {platform.name} | {kind.reads or '—'} |" in exporting
                   for kind in platform.export_types)
    # the rest of each file is left as people wrote it
    assert all((root / name).read_text() == (ROOT / name).read_text() for name, _, _ in generate.parts())


def test_a_file_without_its_markers_is_refused_clearly():
    with pytest.raises(generate.MissingMarkers, match="between the lines"):
        generate.replace_between("services:\n", generate.COMPOSE_MARKERS, "x", name="docker-compose.yml")


def test_a_platforms_codes_become_constants_and_one_declared_twice_is_refused():
    toy = Platform(name="toy", title="Toy", export_types=(ExportKind(name="toy", sources=("m:C",)),),
                   codes={"toy_gone": "short", "toy_long": "a meaning too long for one line " * 5})
    written = generate.platform_codes([toy])
    assert 'TOY_GONE = "toy_gone"  # short\n' in written and 'TOY_LONG = "toy_long"\n' in written
    assert all(len(line) <= 120 for line in written.splitlines())
    with pytest.raises(generate.CodeClash, match="'toy_gone' of platform 'toy' is declared by messages/codes.py"):
        generate.platform_codes([toy], taken=["toy_gone"])
    with pytest.raises(generate.CodeClash):
        generate.platform_codes([toy, toy])


def test_every_code_a_platform_declares_is_a_constant_of_messages_codes():
    from swath.messages import codes

    declared = {code for platform in discovery.platforms() for code in platform.codes}
    assert declared and all(getattr(codes, code.upper()) == code for code in declared)


def test_only_the_platforms_swath_ships_are_written_and_one_that_does_not_load_stops_it(tmp_path, monkeypatch):
    install_entry_points(tmp_path / "plugin", monkeypatch,
                         {"swath.platforms": {"swath_test_toy": "tests.test_platforms:TOY"}})
    assert "swath_test_toy" in {p.name for p in discovery.platforms()}
    assert all("swath_test_toy" not in body for _, _, body in generate.parts())  # a plugin is not the project's
    install_entry_points(tmp_path / "broken", monkeypatch,
                         {"swath.platforms": {"swath_test_missing": "no_such_module:X"}}, dist="swath")
    with pytest.raises(discovery.PlatformUnavailable, match="swath_test_missing"):
        generate.parts()


def test_the_prose_names_every_declared_harvest_type():
    # the tables above are generated; what each type reads, counts and refuses is written by a person, and a
    # platform added without its rows in docs/harvest-types.md shows here
    prose = (ROOT / generate.HARVEST_TYPES).read_text()
    missing = [kind.name for platform in discovery.platforms() for kind in platform.harvest_types
               if f"`{kind.name}`" not in prose]
    assert missing == [], f"docs/harvest-types.md does not describe {', '.join(missing)}"
