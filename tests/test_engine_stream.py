"""Stream harvests: rotation by time and size, running statuses with stats, stop, independent streams."""

from __future__ import annotations

import dataclasses
import json
import threading

from swath.harvesters.run import run_harvest
from tests.enginekit import (
    SECRET,
    StreamApi,
    context,
    raw_bytes,
    read_records,
    routing_key,
    start_message,
    wait_for,
    warc_files,
    warcio_check,
)
from tests.fakes.httpserver import FakeServer, Response, write_chunk


def _start(config, url: str, harvest_id: str):
    ctx, published = context(config)
    message = start_message(url, harvest_id=harvest_id, type_="generic_stream", path=f"coll-{harvest_id}")
    thread = threading.Thread(target=run_harvest, args=(message,),
                              kwargs={"routing_key": routing_key("generic_stream"), "ctx": ctx})
    thread.start()
    return ctx, published, thread


def _stream_ids(paths):
    """Item ids of every stream line recorded, in WARC order, plus the response records seen."""
    ids, responses = [], []
    for rtype, _uri, _status, http_headers, payload, rec_headers in read_records(paths):
        if rtype == "response":
            responses.append((http_headers, payload, rec_headers))
            ids.extend(json.loads(line)["id"] for line in payload.splitlines() if line.strip())
    return ids, responses


def test_stream_rotates_by_time_reports_running_and_stops_cleanly(config, data_root):
    config = dataclasses.replace(config, warc_max_seconds=0.3, status_interval=0.2)
    with FakeServer() as server:
        StreamApi(server)
        ctx, published, thread = _start(config, server.url + "/stream", "stream-a")
        try:
            wait_for(lambda: len(published.warcs) >= 3 and len(published.statuses) >= 3)
        finally:
            ctx.stop.set()
        thread.join(120)
        assert not thread.is_alive()

    kinds = published.kinds()
    assert kinds[0] == "running" and kinds[-1] == "completed success" and kinds[-2] == "warc"
    assert kinds.count("warc") >= 4  # three rotations, then the final WARC after the stop
    running_with_stats = [s for s in published.statuses[1:-1] if s["stats"]]
    assert running_with_stats and all(s["status"] == "running" for s in published.statuses[:-1])
    files = warc_files(data_root)
    assert [w["warc"]["path"] for w in published.warcs] == [str(p) for p in sorted(files)]
    assert not list(data_root.rglob("*.open"))
    assert warcio_check(files).returncode == 0

    ids, responses = _stream_ids(files)
    final = published.statuses[-1]
    # every line the client read is recorded once, in order, across the rotations
    assert ids == list(range(len(ids)))
    # every line in the WARC was handed to the platform and counted, those read just before the stop too
    counted = sum(day["items"] for day in final["stats"].values())
    assert counted == len(ids) > 0
    assert final["warcs"]["count"] == len(files)
    assert final["warcs"]["bytes"] == sum(p.stat().st_size for p in files)
    # each segment carries the original response headers and a segment number
    assert all(h.get_header("Content-Type") == "application/x-ndjson" for h, _, _ in responses)
    segments = [int(r.get_header("WARC-Swath-Stream-Segment")) for _, _, r in responses]
    assert segments == list(range(1, len(segments) + 1))
    assert all(p.endswith(b"\n") for _, p, _ in responses[:-1])  # complete lines per segment
    assert SECRET.encode() not in raw_bytes(files)


def test_streams_rotate_by_size_and_stop_independently(config, data_root):
    config = dataclasses.replace(config, warc_max_bytes=3000, warc_max_seconds=600, status_interval=0.2)
    with FakeServer() as server:
        StreamApi(server, path="/stream")
        ctx_a, pub_a, thread_a = _start(config, server.url + "/stream", "stream-a")
        ctx_b, pub_b, thread_b = _start(config, server.url + "/stream", "stream-b")
        try:
            wait_for(lambda: len(pub_a.warcs) >= 3)
        finally:
            ctx_a.stop.set()
        thread_a.join(120)
        assert not thread_a.is_alive() and thread_b.is_alive()
        before = len(pub_b.messages)
        try:
            wait_for(lambda: len(pub_b.warcs) >= 3 and len(pub_b.messages) > before)
            assert pub_b.statuses[-1]["status"] == "running"
        finally:
            ctx_b.stop.set()
        thread_b.join(120)
        assert not thread_b.is_alive()

    for published, harvest_id in ((pub_a, "stream-a"), (pub_b, "stream-b")):
        assert published.statuses[-1]["status"] == "completed success"
        files = warc_files(data_root / f"coll-{harvest_id}")
        assert len(files) >= 4 and warcio_check(files).returncode == 0
        # size rotation: all but the last WARC passed the limit (checked every engine tick)
        assert all(p.stat().st_size >= 3000 for p in files[:-1])
        ids, _ = _stream_ids(files)
        assert ids == list(range(len(ids)))


def test_shutdown_interrupts_a_stream_leaving_complete_warcs_and_no_final_status(config, data_root):
    from swath.core.jobs import JobInterrupted

    config = dataclasses.replace(config, warc_max_seconds=600, status_interval=0.2)
    outcome: list[object] = []
    with FakeServer() as server:
        StreamApi(server)
        ctx, published = context(config)
        message = start_message(server.url + "/stream", harvest_id="shut", type_="generic_stream")

        def run() -> None:
            try:
                run_harvest(message, routing_key=routing_key("generic_stream"), ctx=ctx)
                outcome.append("returned")
            except JobInterrupted as exc:
                outcome.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for(lambda: any(s["stats"] for s in published.statuses))
        finally:
            ctx.shutdown.set()
            ctx.stop.set()
            thread.join(120)
    assert len(outcome) == 1 and isinstance(outcome[0], JobInterrupted)
    assert {s["status"] for s in published.statuses} == {"running"}
    files = warc_files(data_root)
    assert [w["warc"]["path"] for w in published.warcs] == [str(p) for p in files] and len(files) == 1
    assert not list(data_root.rglob("*.open")) and warcio_check(files).returncode == 0
    ids, _ = _stream_ids(files)
    assert ids == list(range(len(ids))) and ids


def test_stop_hands_out_and_counts_the_lines_already_recorded_and_never_reconnects(config, data_root):
    """A burst shorter than the client's read size waits in urllib3's buffer (recorded, not yet yielded)
    while the server goes quiet; harvest.stop must still deliver and count it, and end the stream."""
    config = dataclasses.replace(config, warc_max_seconds=0.1, status_interval=60)
    burst = [json.dumps({"id": n}).encode() + b"\n" for n in range(25)]
    assert len(b"".join(burst)) < 512  # requests' iter_lines reads 512 bytes at a time
    quiet = threading.Event()

    def stream(request):
        def body(wfile) -> None:
            write_chunk(wfile, b"".join(burst))
            quiet.wait(120)  # no more lines, no EOF: the client is blocked reading

        return Response(200, body, content_type="application/x-ndjson")

    with FakeServer({"/stream": stream}) as server:
        ctx, published, thread = _start(config, server.url + "/stream", "burst")
        try:
            wait_for(lambda: len(_stream_ids(warc_files(data_root))[0]) == len(burst))  # in a closed WARC
        finally:
            ctx.stop.set()
            thread.join(120)
            quiet.set()
        connections = len(server.requests_to("/stream"))
    assert not thread.is_alive()

    final = published.statuses[-1]
    assert final["status"] == "completed success", final
    ids, _ = _stream_ids(warc_files(data_root))
    assert ids == list(range(len(burst)))
    assert sum(day["items"] for day in final["stats"].values()) == len(ids)
    assert connections == 1
