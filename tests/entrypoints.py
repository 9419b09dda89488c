"""Install entry points for one test the way pip would: a distribution's metadata on sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest


def install_entry_points(root: Path, monkeypatch: pytest.MonkeyPatch, groups: dict[str, dict[str, str]],
                         *, dist: str = "swath-test-plugins") -> None:
    """`groups`: entry point group -> {name: "module:attr"}; read by importlib.metadata until the test ends."""
    info = root / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    sections = [f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in entries.items())
                for group, entries in groups.items()]
    (info / "entry_points.txt").write_text("\n".join(sections))
    monkeypatch.syspath_prepend(str(root))
