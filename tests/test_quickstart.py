"""Issue #31 (7): dev/quickstart installs swath without the test extras, and building swath prints no warnings;
dev/test (and CI through it) and dev/setup.sh sourced by hand still install `.[test]`, editable."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def hashed_by_setup_sh() -> list[str]:
    """The files dev/setup.sh's `WANT="$(cat ... | sha1sum ...)"` reads."""
    text = (ROOT / "dev" / "setup.sh").read_text()
    listed = re.search(r'WANT="\$\(cat (.*?)\|\s*sha1sum', text, re.S)
    assert listed, "dev/setup.sh no longer hashes its inputs with cat ... | sha1sum"
    return listed.group(1).replace("\\\n", " ").split()


def test_setup_sh_hashes_every_c_source_setup_py_builds():
    """A C helper setup.py builds but setup.sh does not hash would not be rebuilt when it changes."""
    built = re.findall(r'sources=\["([^"]+)"\]', (ROOT / "setup.py").read_text())
    assert len(built) >= 4 and set(built) <= set(hashed_by_setup_sh()), (built, hashed_by_setup_sh())


def recorded_installs(tmp_path: Path, script: str, env: dict[str, str], script_text: str | None = None) -> list[str]:
    """Run a copy of dev/<script> (or `script_text` in its place) whose .venv's python only records the pip
    commands it is given."""
    work = tmp_path / "checkout"
    (work / "dev").mkdir(parents=True)
    # and what setup.sh hashes to know whether to install again (pyproject, setup.py and the C sources it builds)
    for name in ("dev/setup.sh", f"dev/{script}", *hashed_by_setup_sh()):
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
