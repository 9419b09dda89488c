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
import threading
import uuid
from pathlib import Path

import pika
import pika.exceptions
import pytest

from swath.core.config import Config
from swath.core.paths import PathOutsideDataRoot, export_path, harvest_path
from swath.exporters.base import ExportFailed
from swath.messages import codes
from swath.messages.model import ExportStart
from swath.sfm_index import WARCS_PATH, SfmApiIndex
from tests.brokerprobe import BrokerProbe, running_worker, until_final
from tests.fakes.httpserver import FakeServer, Request, Response, end_chunks, write_chunk
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
    with pytest.raises(PathOutsideDataRoot, match="outside the harvest root .*SWATH_HARVEST_ROOT"):
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


def harvest_and_export(config: Config, broker, volumes: tuple[Path, Path], before_export=None) -> dict:
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
    warcs = [body["warc"] for key, body in harvested if key == "warc_created"]
    stored = sorted(t["id"] for body in response_payloads([Path(w["path"]) for w in warcs])
                    for t in json.loads(body).get("data", []))
    if before_export is not None:
        before_export(warcs, harvest["collection"]["id"])
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
            "files": files, "rows": sorted(rows), "warcs": warcs, "stored": stored}


def test_an_unchanged_sfm_docker_layout_harvests_and_exports(config, broker, volumes):
    _, exports = volumes
    got = harvest_and_export(sfm_site_config(config, volumes), broker, volumes)
    final = got["harvested"][-1][1]
    assert final["status"] == "completed success", final
    warcs = got["warcs"]
    collection = Path(got["harvest"]["path"]).resolve()
    assert warcs and all(Path(w["path"]).is_relative_to(collection) for w in warcs)  # in SFM's collection folder
    for warc in warcs:
        assert hashlib.sha1(Path(warc["path"]).read_bytes()).hexdigest() == warc["sha1"]
        assert Path(warc["path"]).stat().st_size == warc["bytes"]
    stored = got["stored"]
    assert stored == got["hits"] and got["hits"]
    assert got["exported"][-1][1]["status"] == "completed success", got["exported"][-1][1]
    assert len(got["files"]) == 1 and got["files"][0].resolve().is_relative_to(exports.resolve())
    assert got["rows"] == stored
    assert not list(config.data_root.glob("**/*.warc.gz"))  # nothing went to swath's own data root
    # swath's own requester is told how the WARCs were found (no store here); SFM mode leaves it out
    assert codes.WARC_INDEX_SCAN in {note["code"] for note in got["exported"][-1][1]["infos"]}


def queue_exists(config: Config, name: str) -> bool:
    connection = pika.BlockingConnection(pika.URLParameters(config.amqp_url))
    try:
        connection.channel().queue_declare(queue=name, passive=True)
        return True
    except pika.exceptions.ChannelClosedByBroker as exc:
        assert exc.reply_code == 404
        return False
    finally:
        if connection.is_open:
            connection.close()


class SfmWarcsApi:
    """sfm-ui's /api/v1/warcs/ (Django REST framework pages: results + next), listing the WARCs given."""

    def __init__(self, server: FakeServer, warcs: list[dict], *, per_page: int = 1) -> None:
        self.server, self.warcs, self.per_page = server, warcs, per_page
        server.route(WARCS_PATH)(self.handle)

    def handle(self, request: Request) -> Response:
        page = int(request.arg("page", "1"))
        chosen = [w for w in self.warcs if request.arg("collection") in (None, w["collection"])]
        results = chosen[(page - 1) * self.per_page:page * self.per_page]
        more = page * self.per_page < len(chosen)
        next_url = f"{self.server.url}{WARCS_PATH}?page={page + 1}&collection={request.arg('collection')}"
        return Response(200, json.dumps({"count": len(chosen), "next": next_url if more else None,
                                         "results": [{"path": w["path"], "sha1": w["sha1"]}
                                                     for w in results]}).encode())


@pytest.mark.services("RabbitMQ")  # its own BrokerProbe, not the broker fixture
def test_sfm_mode_keeps_no_status_queue_and_no_swath_infos_and_lists_warcs_from_sfm_ui(config, volumes):
    sfm = dataclasses.replace(sfm_site_config(config, volumes), requester="sfm", status_queue="")
    broker = BrokerProbe(sfm)  # not the fixture's: that one declares the status queue
    assert Config.from_env({"SWATH_REQUESTER": "sfm"}).status_queue == ""  # what the one setting sets
    with FakeServer() as ui:
        listed: list[dict] = []
        api = SfmWarcsApi(ui, listed)
        got = harvest_and_export(dataclasses.replace(sfm, sfm_api_url=ui.url), broker, volumes,
                                 before_export=lambda warcs, collection: listed.extend(
                                     [{**w, "collection": collection} for w in warcs]
                                     + [{"path": "/etc/passwd", "sha1": "0", "collection": collection}]))
        asked = ui.requests_to(WARCS_PATH)
    broker.close()
    assert api.warcs is listed
    assert got["harvested"][-1][1]["status"] == "completed success"
    final = got["exported"][-1][1]
    assert final["status"] == "completed success", final
    assert got["rows"] == got["stored"] and got["rows"]
    infos = {note["code"] for body in (b for _, b in got["exported"]) for note in body["infos"]}
    assert not infos & codes.SWATH_INTERNAL_INFOS
    # the WARC list came from sfm-ui, every page of it, for this collection; its path outside the root not read
    assert len(asked) == len(listed) >= 2
    assert {r.arg("collection") for r in asked} == {got["harvest"]["collection"]["id"]}
    assert [w["code"] for w in final["warnings"]] == [codes.PATH_OUTSIDE_DATA_ROOT]
    assert not queue_exists(config, config.status_queue)  # nothing declared it: nothing piles up


def test_sfm_api_failures_fail_the_export_with_a_code(config, volumes):
    harvests, _ = volumes
    start = ExportStart.from_dict({"id": "e1", "type": "twitter_search_2", "format": "csv", "path": "x",
                                   "collection": {"id": "c1"}})
    with FakeServer({WARCS_PATH: lambda r: Response(500, b"{}")}) as ui:
        index = SfmApiIndex(config=dataclasses.replace(config, harvest_root=harvests, sfm_api_url=ui.url))
        with pytest.raises(ExportFailed) as info:
            index.select(start)
    assert info.value.code == codes.SFM_API_UNAVAILABLE
    with FakeServer({WARCS_PATH: lambda r: Response(200, json.dumps(
            {"results": [], "next": "http://elsewhere.invalid/api/v1/warcs/?page=2"}).encode())}) as ui:
        index = SfmApiIndex(config=dataclasses.replace(config, harvest_root=harvests, sfm_api_url=ui.url))
        with pytest.raises(ExportFailed, match="away from") as info:
            index.select(start)
        assert len(ui.requests) == 1  # the foreign next page was never asked for
    assert info.value.code == codes.SFM_API_UNAVAILABLE


def _index(config, harvests, ui, **limits) -> SfmApiIndex:
    return SfmApiIndex(config=dataclasses.replace(config, harvest_root=harvests, sfm_api_url=ui.url, **limits))


_START = {"id": "e1", "type": "twitter_search_2", "format": "csv", "path": "x", "collection": {"id": "c1"}}


def test_sfm_api_next_page_back_to_one_already_read_is_a_loop(config, volumes):
    harvests, _ = volumes
    pages = {"1": "2", "2": "3", "3": "2"}  # page 3 links back to page 2: without a check, 10,000 requests

    def page(req: Request) -> Response:
        number = req.arg("page", "1")
        return Response(200, json.dumps({"results": [], "next": f"{ui.url}{WARCS_PATH}?page={pages[number]}"})
                        .encode())

    with FakeServer({WARCS_PATH: page}) as ui:
        with pytest.raises(ExportFailed, match="already read") as info:
            _index(config, harvests, ui).select(ExportStart.from_dict(_START))
        assert [r.arg("page", "1") for r in ui.requests] == ["1", "2", "3"]  # each page once
    assert info.value.code == codes.PAGINATION_LOOP


def test_sfm_api_answers_are_size_limited_and_cut_at_the_deadline(config, volumes):
    harvests, _ = volumes
    sent: list[int] = []
    stop = threading.Event()

    def endless(wfile) -> None:  # 1 GiB offered
        write_chunk(wfile, b'{"results": [')
        for _ in range(16384):
            write_chunk(wfile, b'{"path": "x"},' * 4681)
            sent.append(65534)
        end_chunks(wfile)

    def drip(wfile) -> None:  # a byte every 0.2 s: each read is within the socket timeout, the answer never ends
        while not stop.wait(0.2):
            write_chunk(wfile, b" ")

    with FakeServer({WARCS_PATH: lambda req: Response(200, endless)}) as ui:
        with pytest.raises(ExportFailed, match="limit") as info:
            _index(config, harvests, ui, max_response_bytes=256 * 1024).select(ExportStart.from_dict(_START))
    assert info.value.code == codes.SFM_API_UNAVAILABLE
    assert sum(sent) < 16384 * 65534  # the client hung up long before the end
    try:
        with FakeServer({WARCS_PATH: lambda req: Response(200, drip)}) as ui:
            with pytest.raises(ExportFailed, match="SWATH_HTTP_DEADLINE") as info:
                _index(config, harvests, ui, http_deadline=2.0).select(ExportStart.from_dict(_START))
    finally:
        stop.set()
    assert info.value.code == codes.SFM_API_UNAVAILABLE


def test_config_check_names_what_is_wrong_for_the_mode(data_root, volumes):
    harvests, exports = volumes
    env = {k: v for k, v in os.environ.items() if not k.startswith("SWATH_")}

    def check(**more: str) -> tuple[int, dict]:
        done = subprocess.run([sys.executable, "-m", "swath", "--data-root", str(data_root), "config", "--check",
                               "--json"], env={**env, **more}, capture_output=True, text=True, timeout=120)
        return done.returncode, json.loads(done.stdout)

    rc, shown = check(SWATH_REQUESTER="sfm", SWATH_HARVEST_ROOT=str(harvests), SWATH_EXPORT_ROOT=str(exports),
                      SWATH_QUEUE_PREFIX="swath_")
    assert (rc, shown["problems"]) == (0, [])
    rc, shown = check(SWATH_REQUESTER="sfm", SWATH_HARVEST_ROOT=str(harvests), SWATH_EXPORT_ROOT=str(exports / "no"),
                      SWATH_STATUS_QUEUE="swath_monitor", SWATH_PLATFORMS="flickr,twitter_bogus")
    assert rc == 1
    assert [line.split(" ")[0] for line in shown["problems"]] == [
        "SWATH_PLATFORMS", f"SWATH_EXPORT_ROOT={exports / 'no'}", "SWATH_STATUS_QUEUE=swath_monitor",
        "SWATH_QUEUE_PREFIX"]
    rc, shown = check(SWATH_STATUS_QUEUE="")  # swath's own requester without its status queue
    assert rc == 1 and shown["problems"][0].startswith("SWATH_STATUS_QUEUE is empty")
