"""One runner per harvest: two replicas handed the same start at the same moment run it once."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from swath.harvesters.warc import file_sha1
from tests.fakes.httpserver import FakeServer
from tests.reliability.kit import (
    ReliabilityApi,
    WorkerProcess,
    declare_queues,
    items_in_warcs,
)
from tests.reliability.racekit import race

pytestmark = pytest.mark.reliability
HARVESTS = 8


def test_two_replicas_given_the_same_start_at_once_run_it_once(config, tmp_path):
    config = dataclasses.replace(config, warc_max_bytes=6000)  # every harvest rotates while the other waits
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=6, per_page=5, delay=0.05)
        declare_queues(config, ["generic_harvester"])
        replicas = []
        for n in range(2):
            (tmp_path / f"r{n}").mkdir()
            replicas.append(WorkerProcess(config=config, name="generic_harvester", log_dir=tmp_path / f"r{n}"))
        ids = [f"claim:{n}" for n in range(HARVESTS)]
        ran = race(config, replicas, [api.start(hid, collection_set="claim", collection=str(n))
                                      for n, hid in enumerate(ids)])
    assert ran.exits == [0, 0]
    finals, warcs = ran.finals, ran.warcs
    for n, harvest_id in enumerate(ids):
        assert [f["status"] for f in finals[harvest_id]] == ["completed success"], (harvest_id, finals[harvest_id])
        served = api.served.items[harvest_id]
        assert len(served) == 6 * 5, f"{harvest_id}: pages fetched more than once"
        announced = [w["warc"] for w in warcs if w["harvest"]["id"] == harvest_id]
        paths = sorted((config.data_root / f"collections/claim/{n}").rglob("*.warc.gz"))
        assert sorted(w["path"] for w in announced) == [str(p) for p in paths]
        assert sorted(items_in_warcs(paths)["pages"]) == sorted(served)
        for warc in announced:  # what was announced is what is on disk
            assert (warc["bytes"], warc["sha1"]) == (Path(warc["path"]).stat().st_size, file_sha1(Path(warc["path"])))
    assert not list(config.data_root.rglob("*.open")), "a WARC was left open"
    assert not list((config.data_root / ".swath" / "claims").glob("*.lock")), "a claim was not released"
    assert ran.waits >= 1, "no copy ever met a running harvest: the race was not exercised"
