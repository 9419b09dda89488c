"""Paths named in messages must resolve inside the data root."""

from __future__ import annotations

import os

import pytest

from swath.core.paths import PathOutsideDataRoot, resolve_inside


def test_relative_and_absolute_paths_inside_are_accepted(data_root):
    assert resolve_inside(data_root, "collections/a") == data_root.resolve() / "collections" / "a"
    assert resolve_inside(data_root, str(data_root / "b")) == data_root.resolve() / "b"
    assert resolve_inside(data_root, str(data_root)) == data_root.resolve()


@pytest.mark.parametrize("bad", ["../outside", "a/../../outside", "/etc", "/tmp", "a/b/../../../x"])
def test_escaping_paths_are_refused(data_root, bad):
    with pytest.raises(PathOutsideDataRoot) as info:
        resolve_inside(data_root, bad)
    assert "outside the data root" in str(info.value)


def test_symlink_out_of_the_root_is_refused(data_root, tmp_path):
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    os.symlink(outside, data_root / "link")
    with pytest.raises(PathOutsideDataRoot):
        resolve_inside(data_root, "link/collection")


def test_sibling_with_common_prefix_is_refused(data_root):
    sibling = data_root.parent / (data_root.name + "-evil")
    sibling.mkdir()
    with pytest.raises(PathOutsideDataRoot):
        resolve_inside(data_root, str(sibling))
