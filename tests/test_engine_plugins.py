"""How the engine finds and runs harvesters beyond its own table: `swath.backends` entry points (a real
dist-info on sys.path, read by importlib.metadata) and the per-message stream hook."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from swath.core import discovery
from swath.core.platforms import HarvestKind, Platform
from swath.harvesters import registry
from swath.harvesters.backends import Backend, Item
from swath.harvesters.base import Harvester
from swath.harvesters.mapping.dataset import Dataset
from swath.harvesters.run import TICK, run_harvest
from swath.messages import codes
from tests.enginekit import context, read_records, start_message, warc_files
from tests.entrypoints import install_entry_points
from tests.fakes.httpserver import FakeServer, Response

PLUGIN = "swath_test_echo"


class EchoBackend(Backend):
    """A third-party backend as a plugin would ship it: ids from /list, each a dataset titled by its id."""

    name = PLUGIN
    display_name = "Echo (engine test plugin)"

    def list_items(self) -> Iterator[Item]:
        for rid in self.fetch_json(f"{self.source.url}/list"):
            yield Item(remote_id=rid, uri=f"{self.source.url}/item/{rid}")

    def process(self, item: Item) -> Dataset | None:
        return Dataset(remote_id=item.remote_id, title=f"title {item.remote_id}")


class MisnamedBackend(EchoBackend):
    name = "something_else"


def install_plugins(tmp_path: Path, monkeypatch, entries: dict[str, str]) -> None:
    """A distribution's metadata on sys.path, exactly as pip would leave it in site-packages."""
    install_entry_points(tmp_path, monkeypatch, {"swath.backends": entries}, dist="swath-engine-test-plugins")


def declared_types() -> set[str]:
    return {name for platform in discovery.platforms() for name in platform.harvest_methods}


def test_an_entry_point_backend_is_a_harvest_type_without_a_registry_line(config, data_root, tmp_path, monkeypatch):
    with pytest.raises(registry.UnknownHarvestType):
        registry.lookup(PLUGIN)
    install_plugins(tmp_path, monkeypatch, {
        PLUGIN: "tests.test_engine_plugins:EchoBackend",
        "dcat": "tests.test_engine_plugins:EchoBackend",  # cannot take over a registered type
    })
    htype = registry.lookup(PLUGIN)
    assert (htype.platform, htype.stream) == (PLUGIN, False) and htype.backend and PLUGIN not in declared_types()
    cls = htype.load()
    assert cls.types == {PLUGIN: "harvest_sources"} and cls.backend is EchoBackend and htype.load() is cls
    assert registry.lookup("dcat").load().__name__ == "DCATHarvester"
    assert [t.name for t in registry.harvester_types()].count(PLUGIN) == 1

    ids = ["a1", "b2", "c3"]
    with FakeServer({"/list": lambda request: Response(200, json.dumps(ids).encode())}) as server:
        ctx, published = context(config)
        message = {**start_message(server.url), "type": PLUGIN, "credentials": {}}
        run_harvest(message, routing_key=f"harvest.start.{PLUGIN}.{PLUGIN}", ctx=ctx)
    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    assert sum(day.get("done", 0) for day in final["stats"].values()) == len(ids)
    resources = [json.loads(r[4]) for r in read_records(warc_files(data_root)) if r[0] == "resource"]
    assert sorted(r["id"] for r in resources) == ids


def test_a_broken_or_misnamed_plugin_is_refused_clearly_and_hides_nothing(config, tmp_path, monkeypatch):
    install_plugins(tmp_path, monkeypatch, {
        "swath_test_missing": "no_such_module_for_swath:Nope",
        "swath_test_misnamed": "tests.test_engine_plugins:MisnamedBackend",
    })
    for name, why in [("swath_test_missing", "ModuleNotFoundError"), ("swath_test_misnamed", "names itself")]:
        with pytest.raises(registry.UnknownHarvestType) as caught:
            registry.lookup(name).load()
        assert why in caught.value.message
    listed = {t.name for t in registry.harvester_types()}
    assert declared_types() <= listed and not {"swath_test_missing", "swath_test_misnamed"} & listed

    ctx, published = context(config)
    message = {**start_message("http://127.0.0.1:9/"), "type": "swath_test_missing"}
    run_harvest(message, routing_key="harvest.start.swath_test_missing.swath_test_missing", ctx=ctx)
    assert [(s["status"], [e["code"] for e in s["errors"]]) for s in published.statuses] == \
        [("completed failure", [codes.UNKNOWN_TYPE])]


OPTION_STREAM = Platform(name="test_option", title="Option Stream", harvester="tests.test_engine_plugins:OptionStream",
                         harvest_types=(HarvestKind(name="test_option_stream", method="run", stream=True),))


class OptionStream(Harvester):
    """Streams only when the message asks for it (like xesam_pmh with options.live)."""

    platform = OPTION_STREAM.name
    service = OPTION_STREAM.harvester_service
    types = OPTION_STREAM.harvest_methods
    stream_types = OPTION_STREAM.stream_types
    seen: list[tuple[bool, bool]] = []

    @classmethod
    def is_stream(cls, start) -> bool:
        return bool(start.options.get("live"))

    def run(self) -> None:
        deadline = time.monotonic() + (20 if self.harvest.is_stream else 3 * TICK)
        while not self.harvest.stopping and time.monotonic() < deadline:  # a stream runs until stopped
            time.sleep(0.01)
        OptionStream.seen.append((self.harvest.is_stream, self.harvest.stopping))


def test_the_message_decides_whether_a_type_that_may_stream_is_a_stream(config, monkeypatch, tmp_path):
    install_entry_points(tmp_path, monkeypatch,
                         {"swath.platforms": {"test_option": "tests.test_engine_plugins:OPTION_STREAM"}})
    monkeypatch.setattr(OptionStream, "seen", [])
    finals = []
    for live in (False, True):
        ctx, published = context(config)
        ctx.stop.set()  # harvest.stop is waiting from the start: both end, only the non-stream says so
        message = {**start_message("x", type_="test_option_stream", harvest_id=f"opt-{live}"),
                   "options": {"live": live}}
        run_harvest(message, routing_key="harvest.start.test_option.test_option_stream", ctx=ctx)
        final = published.statuses[-1]
        finals.append((final["status"], [w["code"] for w in final["warnings"]]))
    assert OptionStream.seen == [(False, True), (True, True)]
    assert finals == [("completed success", [codes.HARVEST_STOPPED]), ("completed success", [])]
    assert registry.lookup("test_option_stream").stream  # the registry still says "may stream"
