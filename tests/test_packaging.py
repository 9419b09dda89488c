"""`pip install .` puts one package, `swath`, into site-packages: the layer folders install as its subpackages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def declared() -> tuple[list[str], dict[str, str]]:
    setuptools = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["setuptools"]
    return setuptools["packages"], setuptools["package-dir"]


def test_every_package_folder_is_declared_under_swath():
    packages, package_dir = declared()
    folders = {"swath": "swath", **{folder: package for package, folder in package_dir.items()}}
    found = set()
    for folder, package in folders.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join([package, *parts]))
    assert sorted(found) == sorted(packages)
    assert all(p == "swath" or p.startswith("swath.") for p in packages)


def test_the_wheel_holds_only_swath(tmp_path):
    # a real build, as `pip install .` does it: the top level of the wheel is what lands in site-packages
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(ROOT)],
                   check=True, capture_output=True)
    wheel = next(tmp_path.glob("swath-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"swath"}
    for expected in ("swath/messages/model.py", "swath/schemas/harvest_start.json", "swath/core/config.py",
                     "swath/platforms/kiel/__init__.py", "swath/exporters/writers.py", "swath/demo_data/",
                     "swath/web/templates/base.html", "swath/web/static/live.js", "swath/web/static/app.css",
                     "swath/shared/templates/status.html", "swath/shared/templates/status_body.html",
                     "swath/store/migrations/versions/0004_web.py", "swath/platforms/twitter/exporter_v2.py"):
        assert any(n.startswith(expected) for n in names), expected
    if shutil.which("cc") and os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")):
        # the optional C helpers (setup.py), each in its package: the engine's CSV rows and row programs,
        # Twitter's values
        for extension in ("swath/exporters/_csvrow.", "swath/exporters/_tablerow.",
                          "swath/platforms/twitter/_jsontext."):
            assert any(n.startswith(extension) and n.endswith(".so") for n in names), extension
