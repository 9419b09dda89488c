"""Shared pieces for the Xesam tests: a private dbus-daemon, record files, WARC payload reading."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from swath.harvesters.run import run_harvest
from swath.platforms.xesam.bus import Endpoint
from swath.platforms.xesam.target import Target
from tests.enginekit import context, read_records, warc_files

ROUTING_KEY = "harvest.start.xesam.xesam_pmh"
TARGET_NAME = "org.swath.test.Target"


@pytest.fixture(name="bus")
def bus_fixture(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A private session bus for this test; DBUS_SESSION_BUS_ADDRESS names it."""
    daemon = shutil.which("dbus-daemon")
    assert daemon, "dbus-daemon not found: apt-get install dbus"
    proc = subprocess.Popen([daemon, "--session", "--print-address", "--nofork"], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        address = proc.stdout.readline().strip()
        assert address.startswith("unix:"), address
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        yield address
    finally:
        proc.terminate()
        proc.wait(timeout=60)


@pytest.fixture(name="bus_config")
def bus_config_fixture(config, bus):
    return dataclasses.replace(config, dbus_session_bus_address=bus)


def write_record(directory: Path, name: str, **record: Any) -> Path:
    path = directory / f"{name}.json"
    tmp = directory / f".{name}.tmp"
    tmp.write_text(json.dumps(record))
    os.replace(tmp, path)  # a scan never sees half a file
    return path


def make_records(directory: Path, n: int, *, base: int = 1_000_000, cat: str = "email") -> dict[str, int]:
    """n records r000.. with mtimes base+1000*i; returns uri -> mtime."""
    directory.mkdir(parents=True, exist_ok=True)
    out = {}
    for i in range(n):
        uri = f"file:///mail/{i:03d}"
        mtime = base + 1000 * i
        write_record(directory, f"r{i:03d}", uri=uri, mtime=mtime, content_cat=cat if i % 2 == 0 else "file",
                     source_cat="local", fields={"title": f"message {i}", "tag": ["a", "b"]})
        out[uri] = mtime
    return out


class RunningTarget:
    def __init__(self, address: str, directory: Path, **kwargs: Any) -> None:
        self.endpoint = Endpoint(address=address)
        self.endpoint.request_name(TARGET_NAME)
        self.target = Target(endpoint=self.endpoint, directory=directory, poll=0.05, **kwargs)
        self.target.start()

    def close(self) -> None:
        self.target.stop()
        self.endpoint.close()


@pytest.fixture(name="serve")
def serve_fixture(bus):
    started: list[RunningTarget] = []

    def start(directory: Path, **kwargs: Any) -> RunningTarget:
        running = RunningTarget(bus, directory, **kwargs)
        started.append(running)
        return running

    yield start
    for running in started:
        running.close()


def start_message(*, harvest_id: str = "xesam:1", options: dict | None = None, token: str = TARGET_NAME) -> dict:
    return {"id": harvest_id, "type": "xesam_pmh", "path": "coll",
            "seeds": [{"id": "seed-1", "token": token}], "options": {"idle_timeout": 10, **(options or {})},
            "collection_set": {"id": "set-1"}, "collection": {"id": "coll-1"}}


def harvest(config, body: dict, stop: threading.Event | None = None):
    ctx, published = context(config, **({"stop": stop} if stop else {}))
    run_harvest(body, routing_key=ROUTING_KEY, ctx=ctx)
    return published


def stored(data_root: Path, harvest_id: str | None = None) -> list[dict]:
    """Every xesam JSON record in the collection's WARCs, in WARC order (optionally of one harvest)."""
    out = []
    for rec in read_records(warc_files(data_root)):
        if rec[0] in ("resource", "metadata") and rec[5].get_header("Content-Type", "").startswith(
                "application/vnd.swath.xesam-pmh"):
            body = json.loads(rec[4])
            if harvest_id is None or body["harvest_id"] == harvest_id:
                out.append({**body, "_warc_uri": rec[1], "_warc_type": rec[0]})
    return out


def final(published) -> dict:
    return published.statuses[-1]


def codes_of(status: dict, kind: str) -> list[str]:
    return [n["code"] for n in status[kind]]
