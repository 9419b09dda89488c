"""Stream lines of any length: split in linear time, recorded whole, and a line over the limit ends the
stream with line_too_long after everything before it is in the WARC."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from swath.harvesters.run import run_harvest
from swath.harvesters.streams import split_lines
from swath.messages import codes
from tests.enginekit import context, read_records, routing_key, start_message, warc_files, warcio_check
from tests.fakes.httpserver import FakeServer, Response, end_chunks, write_chunk


@given(st.lists(st.sampled_from([b"a", b"bc", b"\n", b"\r", b"\r\n", b"\n\n", b"{}"]), max_size=30),
       st.integers(min_value=1, max_value=7))
def test_split_lines_gives_what_splitlines_gives_for_any_chunking(pieces, size):
    body = b"".join(pieces)
    chunks = [body[i:i + size] for i in range(0, len(body), size)]
    assert list(split_lines(chunks)) == body.splitlines()


def _serve(server: FakeServer, body: bytes, piece: int = 1 << 16) -> None:
    def stream(request) -> Response:
        def write(wfile) -> None:
            for start in range(0, len(body), piece):
                write_chunk(wfile, body[start:start + piece])
            end_chunks(wfile)
        return Response(200, write, content_type="application/x-ndjson")
    server.route("/stream")(stream)


def _harvest(config, body: bytes) -> tuple[list[dict], list]:
    with FakeServer() as server:
        _serve(server, body)
        ctx, published = context(config)
        message = start_message(server.url + "/stream", harvest_id="lines", type_="generic_stream", path="lines")
        run_harvest(message, routing_key=routing_key("generic_stream"), ctx=ctx)
    paths = warc_files(config.data_root)
    assert warcio_check(paths).returncode == 0
    return published.statuses, [r for r in read_records(paths) if r[0] == "response"]


def _items(status: dict) -> int:
    return sum(day.get("items", 0) for day in status["stats"].values())


def test_a_long_line_is_recorded_whole_and_counted_once(config):
    rng = random.Random(7)
    lines = [json.dumps({"id": n, "text": "y" * rng.randrange(10, 300)}).encode() for n in range(50)]
    big = json.dumps({"id": "big", "text": "x" * (3 * 1024 * 1024)}).encode()
    body = b"\n".join(lines[:25] + [big] + lines[25:]) + b"\n"
    statuses, responses = _harvest(config, body)
    final = statuses[-1]
    assert final["status"] == "completed success", final
    assert _items(final) == len(lines) + 1
    assert b"".join(payload for *_, payload, _ in responses) == body
    # each segment holds complete lines only
    assert all(payload.endswith(b"\n") for *_, payload, _ in responses)


def test_a_line_over_the_limit_ends_the_stream_keeping_what_came_before(config):
    limit = 256 * 1024
    config = dataclasses.replace(config, stream_max_line_bytes=limit)
    before = b"".join(json.dumps({"id": n}).encode() + b"\n" for n in range(100))
    body = before + b'{"id": "endless", "text": "' + b"z" * (4 * limit)
    statuses, responses = _harvest(config, body)
    final = statuses[-1]
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == [codes.LINE_TOO_LONG]
    assert "SWATH_STREAM_MAX_LINE_BYTES" in final["errors"][0]["message"]
    assert _items(final) == 100  # the unfinished line is not counted as an item
    recorded = b"".join(payload for *_, payload, _ in responses)
    assert recorded.startswith(before)
    truncated = [payload for *_, payload, headers in responses if headers.get_header("WARC-Truncated") == "length"]
    assert len(truncated) == 1 and truncated[0].startswith(b'{"id": "endless"')
    # the line's recording stopped near the limit: the rest of it was never read into memory
    assert limit < len(truncated[0]) <= limit + (1 << 16)
    assert len(recorded) == len(before) + len(truncated[0])


@pytest.mark.parametrize("single", [True, False])
def test_stream_items_counted_for_one_line_or_many(config, single):
    lines = [json.dumps({"id": n, "text": "q" * 1000}).encode() for n in range(200)]
    body = (b"".join(lines) if single else b"\n".join(lines)) + b"\n"
    statuses, responses = _harvest(config, body)
    assert statuses[-1]["status"] == "completed success"
    assert _items(statuses[-1]) == (1 if single else len(lines))
    assert b"".join(payload for *_, payload, _ in responses) == body


def test_twarc_stream_ends_with_line_too_long_instead_of_reconnecting(config):
    """twarc reconnects on requests errors; an overlong line must end the harvest, not loop."""
    from tests.fakes.social import run_harvest_job, start_body

    limit = 128 * 1024
    tweets = [{"data": {"id": str(1000 + n), "text": f"tweet {n}"}} for n in range(3)]
    before = b"".join(json.dumps(t).encode() + b"\r\n" for t in tweets)
    connections = []
    with FakeServer() as server:
        def sample(request) -> Response:
            connections.append(request)
            if request.headers.get("Authorization") != "Bearer bearer-for-lines":
                return Response(401, b"{}")
            def write(wfile) -> None:
                write_chunk(wfile, before)
                for _ in range(8):
                    write_chunk(wfile, b"w" * limit)
                end_chunks(wfile)
            return Response(200, write, content_type="application/json")
        server.route("/2/tweets/sample/stream")(sample)
        cfg = dataclasses.replace(config.with_api_url("twitter", server.url), stream_max_line_bytes=limit)
        out = run_harvest_job(cfg, start_body("twitter_sample", [], credentials={"bearer_token": "bearer-for-lines"}))
    final = out.status
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == [codes.LINE_TOO_LONG]
    assert len(connections) == 1
    assert sum(day.get("tweets", 0) for day in final["stats"].values()) == len(tweets)
