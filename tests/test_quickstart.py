"""Issue #31 (7): dev/quickstart installs swath without the test extras, and building swath prints no warnings;
dev/test (and CI through it) and dev/setup.sh sourced by hand still install `.[test]`, editable."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def recorded_installs(tmp_path: Path, script: str, env: dict[str, str], script_text: str | None = None) -> list[str]:
    """Run a copy of dev/<script> (or `script_text` in its place) whose .venv's python only records the pip
    commands it is given."""
    work = tmp_path / "checkout"
    (work / "dev").mkdir(parents=True)
    # setup.sh hashes the C sources setup.py builds (the engine's CSV encoder and row programs, Twitter's values)
    for name in ("dev/setup.sh", f"dev/{script}", "pyproject.toml", "setup.py", "exporters/_outbuf.h",
                 "exporters/_csvrow.c", "exporters/_tablerow.c", "platforms/twitter/_jsontext.c"):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, work / name)
    if script_text is not None:
        (work / "dev" / script).write_text(script_text)
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    log = tmp_path / "pip.log"
    (bin_dir / "python").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (bin_dir / "swath").write_text("#!/bin/sh\nexit 0\n")  # the quickstart's `swath demo`, not under test here
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    clean_env = {k: v for k, v in os.environ.items() if k != "SWATH_INSTALL_EXTRAS"}
    result = subprocess.run(["bash", str(work / "dev" / script)], cwd=work, capture_output=True, text=True,
                            timeout=120, env={**clean_env, "PYTHON": sys.executable, **env})
    assert result.returncode == 0, result.stderr
    return [line for line in log.read_text().splitlines() if " install " in f" {line} " and "pip" in line]


def test_the_quickstart_installs_swath_without_the_test_extras(tmp_path):
    installs = recorded_installs(tmp_path, "quickstart", {"SWATH_INSTALL_EXTRAS": "test"})  # even if set outside
    assert installs[-1].split()[-3:] == ["install", "-q", "."]  # a plain install, no extras, not editable


def test_dev_test_installs_the_test_extras():
    assert (ROOT / "dev" / "test").read_text().count("SWATH_INSTALL_EXTRAS=test source") == 1
    assert "test" in __import__("tomllib").loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]


def test_setup_sh_sourced_by_hand_still_installs_the_test_extras_editable(tmp_path):
    installs = recorded_installs(tmp_path, "quickstart", {}, script_text='source "$(dirname "$0")/setup.sh"\n')
    assert installs[-1].split()[-2:] == ["-e", ".[test]"]


def test_building_swath_prints_no_setuptools_warnings(tmp_path):
    result = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path), str(ROOT)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    output = result.stdout + result.stderr
    warned = [line for line in output.splitlines() if "Warning" in line and "Location '" not in line]
    assert warned == [], "\n".join(warned[:10])
