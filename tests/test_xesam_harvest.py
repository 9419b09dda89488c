"""The xesam_pmh harvest through the engine: WARC records, watermark, incremental vs full, live streams."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from jeepney import new_method_call

from swath.harvesters.state import StateStore
from swath.messages import codes
from swath.messages.validation import InvalidMessage
from swath.platforms.xesam.bus import DBUS, BusError, Endpoint
from tests.enginekit import wait_for
from tests.xesamkit import (  # noqa: F401 (fixtures)
    TARGET_NAME,
    bus_config_fixture,
    bus_fixture,
    codes_of,
    final,
    harvest,
    make_records,
    serve_fixture,
    start_message,
    stored,
    write_record,
)

WATERMARK = f"xesam:{TARGET_NAME}/org/freedesktop/xesam/pmh/Target:mtime"


def test_first_harvest_then_only_the_delta_arrives(bus_config, serve, data_root, tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 8)
    running = serve(directory)
    first = harvest(bus_config, start_message(harvest_id="x:1", options={"max_batch_size": 3}))
    assert final(first)["status"] == "completed success", final(first)["errors"]
    records = stored(data_root, "x:1")
    assert [r["uri"] for r in records] == sorted(served, key=served.get)
    assert {r["generation"] for r in records} == {0} and all(r["state"] == 1 for r in records)
    assert records[0]["fields"] == [["title", "message 0"], ["tag", "a"], ["tag", "b"]]
    assert StateStore(directory=data_root / "coll").get(WATERMARK) == max(served.values())

    write_record(directory, "r003", uri="file:///mail/003", mtime=1, fields={"title": "edited"})
    os.remove(directory / "r005.json")
    write_record(directory, "extra", uri="file:///mail/extra", mtime=2, fields={"title": "added"})
    entries = running.target.index.entries
    wait_for(lambda: "file:///mail/extra" in entries and entries["file:///mail/005"].deleted
             and entries["file:///mail/003"].fields == (("title", "edited"),))
    second = harvest(bus_config, start_message(harvest_id="x:2"))
    assert final(second)["status"] == "completed success", final(second)["errors"]
    delta = stored(data_root, "x:2")
    assert sorted(r["uri"] for r in delta) == ["file:///mail/003", "file:///mail/005", "file:///mail/extra"]
    assert {r["uri"]: r["deleted"] for r in delta}["file:///mail/005"] is True
    totals = {k: v for day in final(second)["stats"].values() for k, v in day.items()}
    assert totals == {"payloads": 2, "deleted": 1}
    assert StateStore(directory=data_root / "coll").get(WATERMARK) == max(r["mtime"] for r in delta)


def test_too_old_mtime_gets_a_full_dump_with_cleanup_and_a_new_generation(bus_config, serve, data_root, tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 5)
    running = serve(directory)
    harvest(bus_config, start_message(harvest_id="x:1"))
    assert StateStore(directory=data_root / "coll").get(WATERMARK) == max(served.values())
    running.target.horizon_ms = max(served.values()) + 1  # the target lost history past our watermark
    published = harvest(bus_config, start_message(harvest_id="x:2"))
    status = final(published)
    assert status["status"] == "completed success", status["errors"]
    assert codes_of(status, "infos").count(codes.XESAM_FULL_DUMP) == 1  # False and CleanUp: one new generation
    second = stored(data_root, "x:2")
    assert second[0]["kind"] == "cleanup" and second[0]["generation"] == 1 and second[0]["_warc_type"] == "metadata"
    payloads = second[1:]
    assert [r["uri"] for r in payloads] == sorted(served, key=served.get)
    assert {r["generation"] for r in payloads} == {1}
    assert StateStore(directory=data_root / "coll").get(WATERMARK.replace(":mtime", ":generation")) == 1


def test_live_harvest_receives_new_records_until_stop(bus_config, serve, data_root, tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 2)
    serve(directory)
    stop = threading.Event()
    result: list = []
    body = start_message(harvest_id="live:1", options={"live": True})
    runner = threading.Thread(target=lambda: result.append(harvest(bus_config, body, stop)))
    runner.start()
    try:
        wait_for(lambda: len(stored_open(data_root)) >= 2)
        write_record(directory, "late", uri="file:///mail/late", fields={"title": "pushed"})
        wait_for(lambda: len(stored_open(data_root)) >= 3)
    finally:
        stop.set()
        runner.join(timeout=120)
    assert not runner.is_alive(), "the live harvest did not end within 120 s of its stop"
    status = final(result[0])
    assert status["status"] == "completed success", status["errors"]
    assert [r["uri"] for r in stored(data_root, "live:1")] == [*sorted(served, key=served.get), "file:///mail/late"]


def stored_open(data_root) -> list[bytes]:
    """Payload records written so far, including the WARC still being written (uncompressed scan)."""
    import gzip

    found = []
    for path in (data_root / "coll").rglob("*.warc.gz*"):
        try:
            with gzip.open(path) as fh:
                raw = fh.read()
        except (EOFError, OSError):
            raw = _partial_gunzip(path)
        found += [line for line in raw.split(b"\n") if line.startswith(b'{"kind":"payload"')]
    return found


def _partial_gunzip(path) -> bytes:
    import zlib

    data, out = path.read_bytes(), b""
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            out += d.decompress(data)
        except zlib.error:
            break
        data = d.unused_data
    return out


def test_without_a_bus_or_a_target_the_harvest_fails_with_a_code(bus_config, config, data_root, serve, tmp_path):
    no_bus = harvest(dataclasses.replace(config, dbus_session_bus_address=""), start_message(harvest_id="fail:1"))
    assert codes_of(final(no_bus), "errors") == [codes.XESAM_NO_BUS]
    no_target = harvest(bus_config, start_message(harvest_id="fail:2", token="org.swath.test.Nobody"))
    status = final(no_target)
    assert status["status"] == "completed failure"
    assert codes_of(status, "errors") == [codes.XESAM_TARGET_UNREACHABLE]
    assert json.dumps(status).count("Nobody") >= 1
    with pytest.raises(InvalidMessage, match="options.max_batch_size"):  # the declared schema, with the message
        harvest(bus_config, start_message(harvest_id="fail:3", options={"max_batch_size": "lots"}))
    serve(tmp_path)  # a live target, but the seed names no valid object path on it
    bad_path = start_message(harvest_id="fail:4")  # each its own harvest: a finished id is not run again
    bad_path["seeds"][0]["uid"] = "not an object path"
    status = final(harvest(bus_config, bad_path))
    assert codes_of(status, "errors") == [codes.XESAM_TARGET_UNREACHABLE] and "object path" in json.dumps(status)


def committed(data_root, key: str = WATERMARK):
    """The watermark as committed on disk (a fresh StateStore reads only what was committed)."""
    return StateStore(directory=data_root / "coll").get(key)


def test_live_stream_rotates_warcs_and_commits_the_watermark_only_with_a_closed_warc(bus_config, serve, data_root,
                                                                                       tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 2)
    serve(directory)
    config = dataclasses.replace(bus_config, warc_max_seconds=0.3)
    stop = threading.Event()
    result: list = []
    runner = threading.Thread(target=lambda: result.append(
        harvest(config, start_message(harvest_id="live:2", options={"live": True}), stop)))
    runner.start()
    try:
        wait_for(lambda: committed(data_root) == max(served.values()))
        closed = stored(data_root, "live:2")  # closed WARCs only (*.warc.gz)
        assert [r["uri"] for r in closed] == sorted(served, key=served.get)
        write_record(directory, "late", uri="file:///mail/late", fields={"title": "pushed"})
        wait_for(lambda: (committed(data_root) or 0) > max(served.values()))
        assert "file:///mail/late" in [r["uri"] for r in stored(data_root, "live:2")]
    finally:
        stop.set()
        runner.join(timeout=120)
    assert not runner.is_alive(), "the live harvest did not end within 120 s of its stop"
    status = final(result[0])
    assert status["status"] == "completed success", status["errors"]
    assert status["warcs"]["count"] >= 2
    records = stored(data_root, "live:2")
    assert committed(data_root) == max(r["mtime"] for r in records)


def test_swath_xesam_serve_and_its_shutdown_invalidates_a_live_crawl(bus_config, bus, data_root, tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 3)
    root = Path(__file__).resolve().parents[1]
    server = subprocess.Popen([sys.executable, "-m", "swath", "xesam", "serve", str(directory), "--bus-name",
                               TARGET_NAME, "--poll", "0.1"], cwd=root, env={**os.environ}, stderr=subprocess.PIPE,
                              text=True)
    try:
        probe = Endpoint(address=bus)
        try:
            wait_for(lambda: _owned(probe, TARGET_NAME) or server.poll() is not None)
        finally:
            probe.close()
        assert server.poll() is None, server.stderr.read()
        result: list = []
        runner = threading.Thread(target=lambda: result.append(
            harvest(bus_config, start_message(harvest_id="live:3", options={"live": True}))))
        runner.start()
        wait_for(lambda: len(stored_open(data_root)) >= 3)
        server.send_signal(signal.SIGTERM)  # the target invalidates its crawlers: the live harvest ends itself
        assert server.wait(timeout=120) == 0
        runner.join(timeout=120)
        assert not runner.is_alive(), "the live harvest did not end within 120 s of the target's shutdown"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    status = final(result[0])
    assert status["status"] == "completed success", status["errors"]
    assert codes_of(status, "warnings") == [codes.XESAM_INVALIDATED]
    assert sorted(r["uri"] for r in stored(data_root, "live:3")) == sorted(served)
    assert "serving 3 record(s)" in server.stderr.read()


def _owned(endpoint: Endpoint, name: str) -> bool:
    try:
        return bool(endpoint.call(new_method_call(DBUS, "NameHasOwner", "s", (name,)))[0])
    except BusError:
        return False


def test_swath_xesam_serve_refuses_a_name_already_owned_and_a_bus_it_cannot_reach(bus, tmp_path):
    directory = tmp_path / "recs"
    make_records(directory, 1)
    root = Path(__file__).resolve().parents[1]
    serve = [sys.executable, "-m", "swath", "xesam", "serve", str(directory), "--bus-name", TARGET_NAME]
    owner = Endpoint(address=bus)
    try:
        owner.request_name(TARGET_NAME)
        taken = subprocess.run(serve, cwd=root, env={**os.environ}, capture_output=True, text=True, timeout=120)
    finally:
        owner.close()
    assert taken.returncode == 1
    assert f"Error: org.freedesktop.DBus.Error.NameTaken: bus name {TARGET_NAME!r} is already owned" in taken.stderr
    nowhere = f"unix:path={tmp_path / 'no-bus-here'}"
    unreachable = subprocess.run(serve, cwd=root, env={**os.environ, "DBUS_SESSION_BUS_ADDRESS": nowhere},
                                 capture_output=True, text=True, timeout=120)
    assert unreachable.returncode == 1
    assert "Error: cannot connect to the session bus: " in unreachable.stderr
