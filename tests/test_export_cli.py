"""Issue #31 (6): exports as first-class as harvests on the command line: `swath export example TYPE`, unknown
types listing the known ones, `export run --json`, a progress line on stderr and warcs_total in the first status."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from swath.core.paths import resolve_inside
from swath.demo import DEMO_COLLECTION
from swath.exporters.registry import export_types
from swath.messages.model import ExportStart
from tests.test_cli import json_lines, swath


@pytest.mark.parametrize("export_type", export_types())
def test_every_export_type_prints_a_valid_example_under_the_data_root(export_type, data_root):
    result = swath("export", "example", export_type, data_root=data_root)
    assert result.returncode == 0, result.stderr
    body = json.loads(result.stdout)
    start = ExportStart.from_dict(body)
    assert start.type == export_type and body["collection"] == {"id": export_type}
    assert Path(body["path"]).is_relative_to(data_root / "exports")
    resolve_inside(data_root, body["path"])


def test_an_unknown_export_type_lists_the_known_ones(data_root, tmp_path):
    example = swath("export", "example", "instagram", data_root=data_root)
    assert example.returncode == 1
    assert "error [unknown_type]" in example.stderr and "tumblr_blog_posts" in example.stderr
    message = tmp_path / "export.json"
    message.write_text(json.dumps({"id": "e", "type": "instagram", "collection": {"id": "c"}, "path": "exports/e",
                                   "format": "csv"}))
    for args in (["export", "run", str(message)], ["export", "run", "--json", str(message)]):
        result = swath(*args, data_root=data_root)
        assert result.returncode == 2
        (line,) = result.stderr.splitlines()
        assert line.startswith("error [unknown_type]: ") and "'instagram'" in line
        assert all(known in line for known in export_types())
    (refusal,) = json_lines(result.stdout)
    assert refusal["error"]["code"] == "unknown_type"


def test_export_run_says_how_many_warcs_from_the_first_status_and_shows_progress(data_root, tmp_path):
    demo = swath("demo", "--json", data_root=data_root)  # a real harvest of the replayed blog (no export run yet)
    assert demo.returncode == 0, demo.stderr
    warcs = sorted((data_root / "collections").rglob("*.warc.gz"))
    posts = json.loads(resources.files("swath").joinpath("demo_data/tumblr_swath-demo.json").read_text())["posts"]
    example = swath("export", "example", "tumblr_blog_posts", "--id", "e1", data_root=data_root)
    body = {**json.loads(example.stdout), "collection": {"id": DEMO_COLLECTION}}
    message = tmp_path / "export.json"
    message.write_text(json.dumps(body))
    result = swath("export", "run", str(message), data_root=data_root)
    assert result.returncode == 0, result.stderr
    statuses = [m["message"] for m in json_lines(result.stdout)]
    assert statuses[0]["status"] == "running"
    assert statuses[0]["progress"]["warcs_total"] == len(warcs) > 0
    assert statuses[-1]["status"] == "completed success" and statuses[-1]["items"] == len({p["id"] for p in posts})
    progress = [line for line in result.stderr.splitlines() if line.startswith("export e1: ")]
    assert progress and progress[-1].startswith(f"export e1: {len(warcs)}/{len(warcs)} WARCs read, "
                                                f"{statuses[-1]['items']} items, ")
    assert progress[-1].endswith(" items/s")
