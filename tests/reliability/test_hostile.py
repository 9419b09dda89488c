"""Hostile input through real worker subprocesses: schema-driven fuzzing of every consumed message,
malformed API responses, paths escaping the data root, and credentials that must never be written."""

from __future__ import annotations

import itertools
import json
import os
import time
from typing import Any

import orjson
import pika
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swath.messages import codes
from swath.messages.broker import DEAD_REASON_CODE, DEAD_REASON_MESSAGE, Publisher
from swath.messages.model import (
    COMPLETED_SUCCESS,
    ExportStart,
    HarvestStart,
    HarvestStatus,
    HarvestStop,
    Origin,
    now_iso,
)
from swath.messages.validation import InvalidMessage, validate
from tests.fakes.httpserver import FakeServer, Request, Response, end_chunks, write_chunk
from tests.reliability.kit import (
    FINAL,
    GENERIC_SECRET,
    Collector,
    ReliabilityApi,
    WorkerProcess,
    declare_queues,
    everything_written,
    leaks,
    warc_responses,
    worker_env,
)
from tests.reliability.schemagen import from_schema, mutation

pytestmark = pytest.mark.reliability

FUZZ_SECRET = "fz-secret-3c2b1a0f9e"
CODES = {v for k, v in vars(codes).items() if k.isupper() and isinstance(v, str)}
_counter = itertools.count()
PARSERS = {"harvest_start": HarvestStart.from_dict, "export_start": ExportStart.from_dict,
           "harvest_stop": HarvestStop.from_dict}


class DeadLetters:
    """Reads the dead-letter queue: (raw body, reason headers) in arrival order."""

    def __init__(self, config) -> None:
        self.connection = pika.BlockingConnection(pika.URLParameters(config.amqp_url))
        self.channel = self.connection.channel()
        self.queue = config.dead_letter_queue
        self.seen: list[tuple[bytes, dict[str, Any]]] = []

    def poll(self) -> None:
        while True:
            method, props, body = self.channel.basic_get(self.queue, auto_ack=True)
            if method is None:
                return
            self.seen.append((body, dict(props.headers or {})))

    def take(self, body: bytes) -> dict[str, Any] | None:
        self.poll()
        for n, (raw, headers) in enumerate(self.seen):
            if raw == body:
                del self.seen[n]
                return headers
        return None

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def fleet(config, tmp_path):
    """generic_harvester, tumblr_exporter and the monitor as subprocesses (fast retries for fuzzing)."""
    import dataclasses

    config = dataclasses.replace(config, http_retries=1, http_backoff=0.01, http_timeout=5.0)
    logs = tmp_path / "logs"
    logs.mkdir()
    names = ("generic_harvester", "tumblr_exporter")
    declare_queues(config, names)
    env = worker_env(config)
    workers = {n: WorkerProcess(config=config, name=n, log_dir=logs, env=env, log_level="DEBUG").start()
               for n in (*names, "monitor")}
    with Collector(config=config, queue=config.queue_prefix + "requester") as got:
        assert got.wait(lambda: all(w.ready() for w in workers.values()), 120), \
            [w.log_text()[-2000:] for w in workers.values() if not w.ready()]
        dead = DeadLetters(config)
        with Publisher(config=config) as publisher:
            yield config, workers, got, dead, publisher, logs
        dead.close()
    for worker in workers.values():
        assert worker.alive(), f"{worker.name} died:\n{worker.log_text()[-3000:]}"
        assert worker.stop() == 0


def expected_refusal(kind: str, raw: bytes) -> str | None:
    """The dead-letter code the runtime must give `raw` (checked in the runtime's order: JSON, an object,
    a type this worker handles, the schema), or None if it is a message to act on."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return codes.NOT_JSON
    if not isinstance(body, dict):
        return codes.SCHEMA_INVALID
    handled = {"harvest_start": {"generic_pages", "generic_stream"}, "export_start": {"tumblr_blog_posts"}}
    kind_named = body.get("type")
    if kind in handled and (not isinstance(kind_named, str) or kind_named not in handled[kind]):
        return codes.UNKNOWN_TYPE
    try:
        validate(kind, body)
        PARSERS[kind](body)  # the dataclasses check what a schema cannot, e.g. that a date exists
    except InvalidMessage as exc:
        return exc.code
    return None


def message(kind: str, base: dict[str, Any], broken: tuple[str, Any] | None) -> bytes:
    body = dict(base, id=f"fz:{next(_counter)}", nonce=os.urandom(4).hex())
    if broken is None:
        return orjson.dumps(body)
    how, what = broken
    if how == "drop":
        body.pop(what, None)
    elif how == "retype":
        body[what[0]] = what[1]
    elif how == "not_object":
        return orjson.dumps(what)
    else:
        return what + b" " + body["nonce"].encode()  # unique, so its dead letter is found
    return orjson.dumps(body)


def fuzzed(kind: str, page_url: str) -> st.SearchStrategy[tuple[str, bytes]]:
    """(routing key, body): schema-valid messages steered to quick outcomes, half of them broken."""
    from swath.messages.validation import schema

    if kind == "harvest_start":
        types = st.sampled_from(["generic_pages", "generic_stream", "generic_nonesuch", "tumblr_blog_posts"])
        seeds = st.lists(st.fixed_dictionaries({"id": st.sampled_from(["s1", "s2"]), "token": st.sampled_from(
            [page_url, "not a url", "http://127.0.0.1:9/refused", page_url + "&page=99"])}), max_size=2)
        base = st.tuples(from_schema(schema(kind)), types, seeds).map(lambda t: {
            **t[0], "type": t[1], "seeds": t[2], "path": "fuzz/" + str(abs(hash(t[0]["path"])) % 7),
            "credentials": {"api_key": FUZZ_SECRET}})
        key = "harvest.start.generic.generic_pages"
        protected = frozenset({"credentials"})  # credentials in bad messages: see test_schema_errors_quote_*
    elif kind == "export_start":
        base = from_schema(schema(kind)).map(lambda b: {**b, "path": "exports/fuzz", "type": "tumblr_blog_posts"})
        key, protected = "export.start.tumblr.tumblr_blog_posts", frozenset()
    else:
        base, key, protected = from_schema(schema(kind)), "harvest.stop.generic.generic_stream", frozenset()
    return st.tuples(st.just(key), base, st.none() | mutation(kind, protected)).map(
        lambda t: (t[0], message(kind, t[1], t[2])))


def both_targets(body: Any) -> bool:
    return isinstance(body, dict) and "seeds" in body and "collection" in body


def judge(kind: str, key: str, raw: bytes, got: Collector, dead: DeadLetters) -> str:
    code = expected_refusal(kind, raw)
    body = orjson.loads(raw) if code in (None, codes.SCHEMA_INVALID, codes.UNKNOWN_TYPE) else None
    msg_id = body.get("id") if isinstance(body, dict) and isinstance(body.get("id"), str) and body["id"] else None
    deadline = time.monotonic() + 120  # a hang guard: the outcome is an event, it comes or something is wrong
    headers = None
    while time.monotonic() < deadline:
        headers = headers or dead.take(raw)
        final = [s for s in got.statuses(msg_id) if s["status"] in FINAL] if msg_id else []
        if code is None and final:
            assert headers is None, f"a valid message was dead-lettered: {headers}"
            assert all(e["code"] in CODES for e in final[-1]["errors"]), final[-1]
            return "acted on"
        if code is not None and headers is None and final and kind == "export_start" and both_targets(body):
            # the exporter answers "seeds and collection" with a failure status rather than a dead letter
            assert final[-1]["status"] == "completed failure" and final[-1]["errors"][0]["code"] == codes.BAD_REQUEST
            return "refused by status"
        if code is not None and headers is not None and (not msg_id or kind == "harvest_stop" or final):
            assert headers[DEAD_REASON_CODE] == code, (raw[:200], headers)
            assert headers[DEAD_REASON_MESSAGE]
            if msg_id and kind != "harvest_stop":  # a readable id also gets a failure status
                assert final[-1]["status"] == "completed failure"
                assert final[-1]["errors"][0]["code"] == code
            return "dead-lettered"
        if code is None and kind == "harvest_stop":
            return "ignored"  # a stop for a harvest that is not running: logged, nothing published
        time.sleep(0.05)
    raise AssertionError(f"no outcome for {key} {raw[:300]!r} (expected {code or 'a final status'})")


def wait_for_dead_letter(got: Collector, dead: DeadLetters, raw: bytes, timeout: float = 120) -> dict[str, Any] | None:
    """The reason headers of `raw`'s dead letter, or None if none came within `timeout` (a hang guard)."""
    headers: dict[str, Any] | None = None

    def taken() -> bool:
        nonlocal headers
        headers = dead.take(raw)
        return headers is not None

    got.wait(taken, timeout)
    return headers


def test_fuzzed_messages_are_acted_on_or_dead_lettered(fleet):
    config, workers, got, dead, publisher, logs = fleet
    outcomes: list[str] = []
    with FakeServer() as server:
        api = ReliabilityApi(server, pages=2, per_page=2, delay=0.0)
        page_url = api.page_url("fz")

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(st.data())
        def check(data):
            kind = data.draw(st.sampled_from(["harvest_start", "harvest_start", "export_start", "harvest_stop"]))
            key, raw = data.draw(fuzzed(kind, page_url))
            publisher.publish(key, raw).result(120)
            outcomes.append(judge(kind, key, raw, got, dead))

        check()
        # the monitor: statuses and warc_created that break the schema are dead-lettered, the rest recorded
        good = HarvestStatus(id="fz:status", status=COMPLETED_SUCCESS, origin=Origin(service="t", host="h"),
                             date_started=now_iso(), date_ended=now_iso(), stats={}).to_dict()
        for raw in (b"{nope", orjson.dumps({**good, "status": "finished"}), orjson.dumps({"warc": 1}),
                    orjson.dumps(good)):
            key = "warc_created" if b'"warc"' in raw else "harvest.status.generic.generic_pages"
            publisher.publish(key, raw).result(120)
        for raw, code in ((b"{nope", codes.NOT_JSON), (orjson.dumps({"warc": 1}), codes.SCHEMA_INVALID)):
            headers = wait_for_dead_letter(got, dead, raw)
            assert headers is not None, f"no dead letter for {raw!r}"
            assert headers[DEAD_REASON_CODE] == code, (raw, headers)
    print({o: outcomes.count(o) for o in set(outcomes)})
    assert "dead-lettered" in outcomes and "acted on" in outcomes
    for worker in workers.values():
        assert worker.alive(), worker.log_text()[-3000:]
    blobs = [*everything_written(config.data_root), *everything_written(logs),
             ("statuses", json.dumps(got.snapshot()).encode()),
             ("dead-letter reasons", json.dumps([h for _, h in dead.seen], default=str).encode())]
    assert not leaks([FUZZ_SECRET, GENERIC_SECRET], blobs)


# ---- malformed API responses ---------------------------------------------------------------------

TEN_MB = 10 * 1024 * 1024
MALFORMED: dict[str, tuple[int, bytes, str]] = {
    "truncated_json": (200, b'{"items": [{"id": "t-1", "text": "a"}, {"id": "t-', "application/json"),
    "wrong_content_type": (200, b"<items><item id='w-1'/></items>", "text/xml"),
    "html_error_page": (200, b"<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
    "html_500": (500, b"<html><body>Internal Server Error</body></html>", "text/html"),
    "ten_mb_single_line": (200, b'{"items": [{"id": "big-1", "text": "' + b"x" * TEN_MB, "application/json"),
    "invalid_utf8": (200, b'{"items": [{"id": "u-\xff\xfe-1", "text": "\xc3\x28"}], "next": null}', "application/json"),
}
# ends of a harvest that are clean: a stable code naming what went wrong with the remote side
CLEAN_FAILURES = {codes.BAD_RESPONSE, codes.REMOTE_ERROR, codes.RESPONSE_TOO_LARGE, codes.LINE_TOO_LONG,
                  codes.ITEM_FAILED}


def test_malformed_api_responses_end_cleanly(config, tmp_path):
    """Each malformed answer (to a paged harvest, to a stream, to Tumblr) gives one final status: success
    with what could be read, or a failure with a clean code; the bytes are in the WARC; workers survive."""
    import dataclasses

    config = dataclasses.replace(config, http_retries=1, http_backoff=0.01)
    with FakeServer() as server:
        for name, (status, body, ctype) in MALFORMED.items():
            response = Response(status, body, content_type=ctype)
            server.route(f"/bad/{name}")(lambda req, r=response: r)
            server.route(f"/v2/blog/{name}.example.org/posts")(lambda req, r=response: r)

            def stream(req: Request, body: bytes = body, status: int = status, ctype: str = ctype) -> Response:
                def write(wfile) -> None:
                    for start in range(0, len(body), 1 << 20):
                        write_chunk(wfile, body[start:start + (1 << 20)])
                    end_chunks(wfile)
                return Response(status, write, content_type=ctype)

            server.route(f"/badstream/{name}")(stream)
        config = config.with_api_url("tumblr", server.url)
        logs = tmp_path / "logs"
        logs.mkdir()
        names = ("generic_harvester", "tumblr_harvester")
        declare_queues(config, names)
        workers = [WorkerProcess(config=config, name=n, log_dir=logs, env=worker_env(config)).start() for n in names]
        starts = []
        for name in MALFORMED:
            common = {"credentials": {"api_key": GENERIC_SECRET}, "collection_set": {"id": "bad"}}
            starts += [
                ("harvest.start.generic.generic_pages", {**common, "id": f"bad:pages:{name}", "type": "generic_pages",
                 "path": f"bad/pages-{name}", "collection": {"id": f"pages-{name}"},
                 "seeds": [{"id": "s1", "token": f"{server.url}/bad/{name}"}]}),
                ("harvest.start.generic.generic_stream", {**common, "id": f"bad:stream:{name}",
                 "type": "generic_stream", "path": f"bad/stream-{name}", "collection": {"id": f"stream-{name}"},
                 "seeds": [{"id": "s1", "token": f"{server.url}/badstream/{name}"}]}),
                ("harvest.start.tumblr.tumblr_blog_posts", {**common, "id": f"bad:tumblr:{name}",
                 "type": "tumblr_blog_posts", "path": f"bad/tumblr-{name}", "collection": {"id": f"tumblr-{name}"},
                 "seeds": [{"id": "s1", "uid": f"{name}.example.org"}]}),
            ]
        try:
            with Collector(config=config, queue=config.queue_prefix + "requester") as got, \
                    Publisher(config=config) as requester:
                for key, body in starts:
                    requester.publish(key, body).result(120)
                ids = [body["id"] for _, body in starts]
                got.wait(lambda: all(i in got.finals() for i in ids), 120)
                finals = got.finals()
            assert all(w.alive() for w in workers), [w.log_text()[-2000:] for w in workers]
        finally:
            exits = [w.stop() for w in workers]
    assert exits == [0, 0]
    missing = [i for i in ids if i not in finals]
    assert not missing, f"lost harvests: {missing}"
    assert all(len(finals[i]) == 1 for i in ids)
    unclean = {i: [e["code"] for e in finals[i][0]["errors"]] for i in ids
               if finals[i][0]["status"] == "completed failure"
               and not {e["code"] for e in finals[i][0]["errors"]} <= CLEAN_FAILURES}
    assert not unclean, f"failures without a clean code: {unclean}"
    for key, body in starts:  # nothing lost: what the server sent is in the harvest's WARCs
        warcs = sorted((config.data_root / body["path"]).rglob("*.warc.gz"))
        name = body["id"].split(":")[-1]
        status, sent, _ = MALFORMED[name]
        payloads = b"".join(p for _, p in warc_responses(warcs)) if status == 200 else b""
        if status == 200 and "stream" not in key:
            assert payloads == sent, body["id"]
    logs_and_warcs = [*everything_written(config.data_root), *everything_written(logs),
                      ("statuses", json.dumps(got.snapshot()).encode())]
    assert not leaks([GENERIC_SECRET], logs_and_warcs)


# ---- paths and credentials -----------------------------------------------------------------------


def test_paths_outside_the_data_root_are_refused(fleet, tmp_path):
    config, workers, got, dead, publisher, logs = fleet
    outside = tmp_path / "outside"
    outside.mkdir()
    (config.data_root / "escape").symlink_to(outside)
    hostile = ["../x", "../../etc", "/etc", str(outside), "escape", "escape/deeper", "a/../../b", "a/\x00b"]
    for n, path in enumerate(hostile):
        publisher.publish("harvest.start.generic.generic_pages", {
            "id": f"path:h:{n}", "type": "generic_pages", "path": path, "credentials": {"api_key": FUZZ_SECRET},
            "seeds": [{"id": "s1", "token": "http://127.0.0.1:9/x"}]}).result(120)
        publisher.publish("export.start.tumblr.tumblr_blog_posts", {
            "id": f"path:e:{n}", "type": "tumblr_blog_posts", "path": path, "format": "csv",
            "collection": {"id": "c"}}).result(120)
    ids = [f"path:{k}:{n}" for n in range(len(hostile)) for k in "he"]
    assert got.wait(lambda: all(i in got.finals() for i in ids), 120), set(ids) - set(got.finals())
    for i in ids:
        (final,) = got.finals()[i]
        assert final["status"] == "completed failure"
        assert [e["code"] for e in final["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT], (i, final["errors"])
    assert not any(outside.iterdir()), "something was written through the symlink"
    assert not (tmp_path / "x").exists() and not (config.data_root.parent / "b").exists()


def test_schema_errors_do_not_quote_credentials(fleet):
    config, workers, got, dead, publisher, logs = fleet
    bodies = [{"id": "cred:1", "type": "generic_pages", "path": "p", "credentials": {"api_key": [FUZZ_SECRET]}},
              {"id": "cred:2", "type": "generic_pages", "path": "p", "credentials": FUZZ_SECRET}]
    for body in bodies:
        publisher.publish("harvest.start.generic.generic_pages", body).result(120)
    assert got.wait(lambda: {"cred:1", "cred:2"} <= set(got.finals()), 120), set(got.finals())
    assert got.wait(lambda: dead.poll() or len(dead.seen) >= 2, 120), dead.seen  # both are dead-lettered too
    assert [h[DEAD_REASON_CODE] for _, h in dead.seen] == [codes.SCHEMA_INVALID] * 2
    blobs = [("statuses", json.dumps(got.snapshot()).encode()),
             ("dead-letter reasons", json.dumps([h for _, h in dead.seen], default=str).encode()),
             *everything_written(logs)]
    assert not leaks([FUZZ_SECRET], blobs)


def test_impossible_export_dates_are_refused_with_a_code(fleet):
    config, workers, got, dead, publisher, logs = fleet
    for n, date in enumerate(["0000-00-00T00:00", "\u0662\u0660\u0662\u0664-01-01T00:00Z"]):
        publisher.publish("export.start.tumblr.tumblr_blog_posts", {
            "id": f"date:{n}", "type": "tumblr_blog_posts", "path": "exports/d", "format": "csv",
            "collection": {"id": "c"}, "item_date_start": date}).result(120)
    assert got.wait(lambda: {"date:0", "date:1"} <= set(got.finals()), 120), set(got.finals())
    codes_seen = [got.finals()[f"date:{n}"][0]["errors"][0]["code"] for n in range(2)]
    assert set(codes_seen) <= {codes.SCHEMA_INVALID, codes.BAD_REQUEST}, codes_seen
