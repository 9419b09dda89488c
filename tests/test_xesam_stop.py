"""harvest.stop ends a non-live xesam_pmh harvest too: against a target whose backlog never ends (it can only
end by the stop), on a real dbus-daemon; what arrived is in complete WARCs, the crawler is invalidated."""

from __future__ import annotations

import threading
from functools import partial

from fastwarc.warc import ArchiveIterator as FastIterator
from fastwarc.warc import WarcRecordType
from jeepney import DBusAddress, HeaderFields, Message, new_method_call
from warcio.archiveiterator import ArchiveIterator

from swath.core.jobs import JobInterrupted
from swath.harvesters.embedded import is_stream_message
from swath.harvesters.state import StateStore
from swath.messages import codes
from swath.messages.broker import Publisher
from swath.platforms.xesam.bus import ERR_UNKNOWN_OBJECT, Call, Endpoint, Interface, error_of, header
from swath.platforms.xesam.payload import (
    DEFAULT_TARGET_PATH,
    ERR_INVALIDATED,
    IFACE_CRAWLER,
    IFACE_TARGET,
    NORMAL,
    UPDATE_RECORDS_SIG,
    Payload,
    ms_to_iso,
)
from swath.platforms.xesam.target import NO_REPLY
from tests.brokerprobe import running_worker, until_final
from tests.enginekit import context, harvest_thread, wait_for, warc_files
from tests.xesamkit import (  # noqa: F401 (fixtures)
    ROUTING_KEY,
    TARGET_NAME,
    bus_config_fixture,
    bus_fixture,
    codes_of,
    final,
    harvest,
    start_message,
    stored,
)

BATCH = 4
SERVICE_UNKNOWN = "org.freedesktop.DBus.Error.ServiceUnknown"  # the crawler's connection is gone from the bus


class EndlessTarget:
    """Sends batches of old payloads (so the crawl is never caught up), the next one as soon as the last is
    answered; `acked` holds the uris of every batch the crawler answered with success, in order."""

    def __init__(self, address: str) -> None:
        self.endpoint = Endpoint(address=address)
        self.endpoint.request_name(TARGET_NAME)
        self.acked: list[str] = []
        self.sent = 0
        self.refusal = ""  # the error that answered the first batch after the crawler went
        self.ended = threading.Event()
        self.invalidated: list[tuple[str, str]] = []  # (crawler path, message) of Invalidated signals
        self.endpoint.export(DEFAULT_TARGET_PATH, Interface(IFACE_TARGET, {"ListRecords": self._list_records}))
        self.endpoint.watch_signal(interface=IFACE_CRAWLER, member="Invalidated", callback=self._on_invalidated)

    def _list_records(self, call: Call) -> None:
        *_, crawler = call.args
        self.crawler = DBusAddress(crawler, bus_name=call.sender, interface=IFACE_CRAWLER)
        call.reply("b", (True,))
        self._send()

    def _send(self) -> None:
        payloads = [Payload(uri=f"file:///endless/{n:06d}", timestamp=ms_to_iso(1_000_000 + n), content_cat="email",
                            source_cat="local", state=NORMAL, fields=(("title", f"n{n}"),))
                    for n in range(self.sent, self.sent + BATCH)]
        self.sent += BATCH
        batch = [p.to_wire() for p in payloads]
        self.endpoint.call_async(new_method_call(self.crawler, "UpdateRecords", UPDATE_RECORDS_SIG, (batch,)),
                                 partial(self._answered, [p.uri for p in payloads]))

    def _answered(self, uris: list[str], msg: Message) -> None:
        err = error_of(msg)
        if err is not None:
            self.refusal = err.name
            self.ended.set()
            return
        self.acked.extend(uris)
        self._send()

    def _on_invalidated(self, msg: Message) -> None:
        self.invalidated.append((header(msg, HeaderFields.path, ""), msg.body[0] if msg.body else ""))


def test_a_non_live_harvest_stops_mid_crawl_with_complete_warcs(bus_config, bus, data_root):
    target = EndlessTarget(bus)
    stop = threading.Event()
    result: list = []
    body = start_message(harvest_id="stop:1", options={"max_batch_size": BATCH, "idle_timeout": 3600})
    runner = threading.Thread(target=lambda: result.append(harvest(bus_config, body, stop)))
    runner.start()
    try:
        wait_for(lambda: len(target.acked) >= 5 * BATCH, what="five batches stored")
    finally:
        stop.set()  # the target is still sending: only the stop can end this harvest
        runner.join(timeout=120)
    try:
        assert not runner.is_alive(), "the non-live harvest did not end within 120 s of its stop"
        wait_for(target.ended.is_set, what="the target's next batch refused")
    finally:
        target.endpoint.close()

    status = final(result[0])
    assert status["status"] == "completed success", status["errors"]
    acked = list(target.acked)
    totals = {k: v for day in status["stats"].values() for k, v in day.items()}
    assert totals == {"payloads": len(acked)}
    [info] = [n for n in status["infos"] if n["code"] == codes.XESAM_STOPPED]
    assert f"{len(acked)} payload(s) stored" in info["message"] and info["seed_id"] == "seed-1"
    assert codes_of(status, "warnings") == [] and codes_of(status, "errors") == []
    # the crawler told the target it is gone; a batch sent after that got an error (refused by the crawler,
    # or NoReply/ServiceUnknown from the bus once it left), never a success
    assert [message for _path, message in target.invalidated] == ["harvest stopped"]
    assert target.refusal in (ERR_INVALIDATED, ERR_UNKNOWN_OBJECT, NO_REPLY, SERVICE_UNKNOWN)
    assert len(acked) < target.sent  # the last batch sent was refused, not stored

    # every batch the crawler answered is in the WARCs, nothing else; the WARCs are complete for both readers
    paths = warc_files(data_root / "coll")
    assert paths and not list((data_root / "coll").rglob("*.open"))
    assert [r["uri"] for r in stored(data_root, "stop:1")] == acked
    warcio_uris, fast_uris = [], []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh, check_digests="raise"):
                rec.content_stream().read()
                if rec.rec_type == "resource":
                    warcio_uris.append(rec.rec_headers.get_header("WARC-Target-URI"))
        with open(path, "rb") as fh:
            for frec in FastIterator(fh, parse_http=False):
                assert frec.verify_block_digest(), f"{path.name}: a block digest does not match"
                if frec.record_type == WarcRecordType.resource:
                    fast_uris.append(frec.headers.get("WARC-Target-URI"))
    assert warcio_uris == fast_uris == acked
    watermark = f"xesam:{TARGET_NAME}{DEFAULT_TARGET_PATH}:mtime"
    assert StateStore(directory=data_root / "coll").get(watermark) == 1_000_000 + len(acked) - 1


def test_a_first_ctrl_c_stops_any_xesam_harvest_cleanly_while_rest_harvests_ignore_stop():
    assert is_stream_message(start_message(harvest_id="c:1"))  # not live: stop, not interrupt
    assert is_stream_message(start_message(harvest_id="c:2", options={"live": True}))
    rest = {"id": "c:3", "type": "generic_pages", "path": "coll", "seeds": [{"id": "s", "token": "http://x/"}]}
    assert not is_stream_message(rest)


def test_harvest_stop_through_rabbitmq_reaches_a_non_live_crawl(bus_config, bus, broker):
    target = EndlessTarget(bus)
    start = start_message(harvest_id="stop:broker", options={"max_batch_size": BATCH, "idle_timeout": 3600})
    try:
        with running_worker(bus_config, "xesam_harvester"), Publisher(config=bus_config) as requester:
            requester.publish("harvest.start.xesam.xesam_pmh", start).result(120)
            wait_for(lambda: len(target.acked) >= 3 * BATCH, what="three batches stored")
            requester.publish("harvest.stop.xesam.xesam_pmh", {"id": start["id"]}).result(120)
            received = until_final(broker, bus_config.status_queue)
        wait_for(target.ended.is_set, what="the target's next batch refused")
    finally:
        target.endpoint.close()
    final_status = received[-1][1]
    assert final_status["status"] == "completed success", final_status["errors"]
    assert codes.XESAM_STOPPED in codes_of(final_status, "infos")
    warcs = [body["warc"]["path"] for key, body in received if key == "warc_created"]
    assert warcs and final_status["warcs"]["count"] == len(warcs)
    totals = {k: v for day in final_status["stats"].values() for k, v in day.items()}
    assert totals == {"payloads": len(target.acked)}
    assert [message for _path, message in target.invalidated] == ["harvest stopped"]


def test_a_shutdown_interrupts_the_crawl_for_a_resume_and_says_no_stop(bus_config, bus, data_root):
    target = EndlessTarget(bus)
    ctx, published = context(bus_config)
    body = start_message(harvest_id="stop:shut", options={"max_batch_size": BATCH, "idle_timeout": 3600})
    runner, outcome = harvest_thread(body, routing_key=ROUTING_KEY, ctx=ctx)
    try:
        wait_for(lambda: len(target.acked) >= 2 * BATCH, what="two batches stored")
    finally:
        ctx.shutdown.set()
        ctx.stop.set()
        runner.join(timeout=120)
    try:
        assert not runner.is_alive(), "the harvest did not end within 120 s of the shutdown"
        wait_for(target.ended.is_set, what="the target's next batch refused")  # every answer has arrived
    finally:
        target.endpoint.close()
    assert len(outcome) == 1 and isinstance(outcome[0], JobInterrupted)
    assert {s["status"] for s in published.statuses} == {"running"}  # no final status: it resumes
    assert all(codes.XESAM_STOPPED not in codes_of(s, "infos") for s in published.statuses)
    assert [r["uri"] for r in stored(data_root, "stop:shut")] == target.acked  # kept for the resumed run
