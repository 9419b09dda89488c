"""Exports never write outside the data root: not through the message's path, nor through its id."""

from __future__ import annotations

from pathlib import Path

import pytest

from swath.messages import codes
from tests.test_export import collections, export, out_dir, run  # noqa: F401 - fixtures


def test_path_outside_data_root_fails(run, collections):
    status = run(export("flickr_user", "1", path="/tmp/../etc/swath-export"))
    assert [e["code"] for e in status["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT]


@pytest.mark.parametrize("hostile_id", ["../../escaped", "/tmp/swath-absolute-id", "..", ".hidden", "a/b\\c"])
def test_an_export_id_never_places_a_file_outside_the_export_directory(run, collections, config, hostile_id):
    before = {p for p in config.data_root.parent.rglob("*") if p.is_file()}
    status = run(export("flickr_user", "1", id=hostile_id))
    assert status["status"] == "completed success", status
    written = {p for p in config.data_root.parent.rglob("*") if p.is_file()} - before
    files = [p for p in written if p.suffix == ".csv"]
    assert files and all(p.parent == out_dir(config) for p in files), sorted(map(str, written))
    assert not any(p.name.startswith(".") for p in files)
    assert not Path("/tmp/swath-absolute-id_001.csv").exists()


def test_a_folder_where_a_later_segment_goes_fails_the_export_before_any_file_is_named(run, collections, config):
    # segments of 1 item: exp1_001.csv, exp1_002.csv, ...; a folder holds the second name
    planted = out_dir(config) / "exp1_002.csv"
    (planted / "kept").mkdir(parents=True)
    status = run(export("flickr_user", "1", segment_size=1))
    assert status["status"] == "completed failure"
    assert [e["code"] for e in status["errors"]] == [codes.BAD_REQUEST]
    assert "exp1_002.csv" in status["errors"][0]["message"]
    # no segment took its final name: a failed export leaves nothing that looks like a finished part of it
    assert sorted(p.name for p in out_dir(config).iterdir()) == ["exp1_002.csv"]
    assert (planted / "kept").is_dir()
