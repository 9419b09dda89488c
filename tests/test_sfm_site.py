"""An SFM site as it is (issue 33): sfm-docker's two volumes, harvest paths under one and export paths under the
other, neither inside swath's data root; messages as sfm-ui publishes them, through real workers on RabbitMQ."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from swath.core.config import Config
from swath.core.paths import PathOutsideDataRoot, export_path, harvest_path
from tests.brokerprobe import running_worker, until_final
from tests.fakes.twitter import FakeTwitter, matches
from tests.test_e2e_broker import response_payloads
from tests.test_sfm3_keys import (
    SFM_UI_BINDINGS,
    mandatory_channel,
    publish_mandatory,
    sfm_export_start,
    sfm_harvest_start,
)


@pytest.fixture
def volumes(tmp_path: Path) -> tuple[Path, Path]:
    """sfm-docker's /sfm-collection-set-data and /sfm-export-data, beside (not under) swath's data root."""
    harvests, exports = tmp_path / "sfm-collection-set-data", tmp_path / "sfm-export-data"
    harvests.mkdir()
    exports.mkdir()
    return harvests, exports


def test_one_data_root_still_holds_both(data_root):
    config = Config.from_env({"SWATH_DATA_ROOT": str(data_root)})
    assert config.harvest_base == config.export_base == data_root
    assert harvest_path(config, "collections/a") == data_root.resolve() / "collections" / "a"
    assert export_path(config, "exports/e") == data_root.resolve() / "exports" / "e"
    with pytest.raises(PathOutsideDataRoot, match="SWATH_DATA_ROOT"):
        harvest_path(config, str(data_root.parent))


def test_each_root_takes_only_its_own_paths(data_root, volumes, tmp_path):
    harvests, exports = volumes
    config = Config.from_env({"SWATH_DATA_ROOT": str(data_root), "SWATH_HARVEST_ROOT": str(harvests),
                              "SWATH_EXPORT_ROOT": str(exports)})
    collection = harvests / "collection_set" / "s1" / "c1"
    assert harvest_path(config, str(collection)) == collection.resolve()
    assert export_path(config, str(exports / "export" / "e1")) == (exports / "export" / "e1").resolve()
    with pytest.raises(PathOutsideDataRoot, match="SWATH_HARVEST_ROOT"):
        harvest_path(config, str(exports / "export" / "e1"))  # an export volume is no place for WARCs
    with pytest.raises(PathOutsideDataRoot, match="SWATH_EXPORT_ROOT"):
        export_path(config, str(collection))  # exports never write among the WARCs
    with pytest.raises(PathOutsideDataRoot):
        harvest_path(config, str(data_root / "collections" / "c1"))  # the data root is no longer a harvest root
    os.symlink(tmp_path, harvests / "link")
    with pytest.raises(PathOutsideDataRoot):
        harvest_path(config, "link/collection_set/s1/c1")  # a planted link out of the harvest root


def test_config_shows_both_roots_and_where_they_came_from(data_root, volumes):
    harvests, exports = volumes
    env = {**os.environ, "SWATH_DATA_ROOT": str(data_root), "SWATH_HARVEST_ROOT": str(harvests)}
    env.pop("SWATH_EXPORT_ROOT", None)
    env.pop("SWATH_REQUESTER", None)
    shown = json.loads(subprocess.run([sys.executable, "-m", "swath", "config", "--json"], env=env, check=True,
                                      capture_output=True, text=True, timeout=120).stdout)
    assert shown["harvest_root"] == str(harvests) and shown["harvest_root_from"] == "SWATH_HARVEST_ROOT"
    assert shown["export_root"] == str(data_root) and shown["export_root_from"] == "the data root"


def sfm_site_config(config: Config, volumes: tuple[Path, Path]) -> Config:
    harvests, exports = volumes
    return dataclasses.replace(config, harvest_root=harvests, export_root=exports)


def harvest_and_export(config: Config, broker, volumes: tuple[Path, Path]) -> dict:
    """A twitter_search_2 harvest into the harvest volume and a CSV export into the export volume, published as
    sfm-ui does; what the sfm_ui queue heard, the WARCs and the exported ids."""
    harvests, exports = volumes
    sfm_ui = broker.queue(config.queue_prefix + "sfm_ui", SFM_UI_BINDINGS)
    with FakeTwitter() as fake:
        config = config.with_api_url("twitter", fake.url)
        harvest = sfm_harvest_start(harvests, "twitter_search_2",
                                    [{"id": uuid.uuid4().hex, "token": {"query": "gwu"}}], {"incremental": True})
        # sfm-ui's credential form leaves the fields not filled in as empty strings
        harvest["credentials"] = {**{k: "" for k in harvest["credentials"]},
                                  "bearer_token": harvest["credentials"]["bearer_token"]}
        with running_worker(config, "twitter_harvester"), mandatory_channel(config) as channel:
            publish_mandatory(channel, config, "harvest.start.twitter2.twitter_search_2.priority", harvest)
            harvested = until_final(broker, sfm_ui)
        hits = sorted(t["id"] for t in fake.world.tweets if matches("gwu", t))
    export = sfm_export_start(exports, "twitter_search_2", harvest["collection"]["id"])
    with running_worker(config, "twitter_exporter"), mandatory_channel(config) as channel:
        publish_mandatory(channel, config, "export.start.twitter2.twitter_search_2", export)
        exported = until_final(broker, sfm_ui)
    files = sorted(Path(export["path"]).glob("*.csv"))
    rows = []
    for file in files:
        with file.open(newline="", encoding="utf-8") as fh:
            rows.extend(row["id"] for row in csv.DictReader(fh))
    return {"harvest": harvest, "harvested": harvested, "hits": hits, "export": export, "exported": exported,
            "files": files, "rows": sorted(rows)}


def test_an_unchanged_sfm_docker_layout_harvests_and_exports(config, broker, volumes):
    harvests, exports = volumes
    got = harvest_and_export(sfm_site_config(config, volumes), broker, volumes)
    final = got["harvested"][-1][1]
    assert final["status"] == "completed success", final
    warcs = [body["warc"] for key, body in got["harvested"] if key == "warc_created"]
    collection = Path(got["harvest"]["path"]).resolve()
    assert warcs and all(Path(w["path"]).is_relative_to(collection) for w in warcs)  # in SFM's collection folder
    for warc in warcs:
        assert hashlib.sha1(Path(warc["path"]).read_bytes()).hexdigest() == warc["sha1"]
        assert Path(warc["path"]).stat().st_size == warc["bytes"]
    stored = sorted(t["id"] for body in response_payloads([Path(w["path"]) for w in warcs])
                    for t in json.loads(body).get("data", []))
    assert stored == got["hits"] and got["hits"]
    assert got["exported"][-1][1]["status"] == "completed success", got["exported"][-1][1]
    assert len(got["files"]) == 1 and got["files"][0].resolve().is_relative_to(exports.resolve())
    assert got["rows"] == stored
    assert not list(config.data_root.glob("**/*.warc.gz"))  # nothing went to swath's own data root
