"""Xesam-PMH on a real private dbus-daemon: the reference target, the crawler object, the xesam_pmh harvest."""

from __future__ import annotations

import os
import queue
import threading
import time

import pytest
from jeepney import DBusAddress, new_method_call

from swath.messages import codes
from swath.platforms.xesam.bus import ERR_INVALID_ARGS, BusError, Call, Endpoint, Interface
from swath.platforms.xesam.crawler import Crawler, Event
from swath.platforms.xesam.payload import (
    IFACE_CRAWLER,
    IFACE_TARGET,
    UPDATE_RECORDS_SIG,
    ms_to_iso,
)
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


def crawler_on(address: str, path: str) -> tuple[Endpoint, Crawler]:
    endpoint = Endpoint(address=address)
    return endpoint, Crawler(endpoint=endpoint, path=path, target_name=TARGET_NAME)


def next_event(crawler: Crawler, timeout: float = 120.0) -> Event:
    """The crawler's next event; the timeout only guards against a hang."""
    try:
        return crawler.events.get(timeout=timeout)
    except queue.Empty:
        raise AssertionError(f"no event for the crawler at {crawler.path} within {timeout:g}s") from None


def take_until_idle(crawler: Crawler, *, answer: bool = True, timeout: float = 120.0) -> list[Event]:
    """Events up to and including the empty batch that says the target has sent everything."""
    events = []
    while True:
        event = next_event(crawler, timeout)
        events.append(event)
        if answer:
            event.done()
        if event.kind == "batch" and not event.payloads:
            return events


def uris(events: list[Event]) -> list[str]:
    return [p.uri for e in events for p in e.payloads]


def test_two_crawlers_at_different_mtimes_get_their_own_deltas_in_order(bus, serve, tmp_path):
    served = make_records(tmp_path / "recs", 12)
    ordered = sorted(served, key=served.get)
    middle = served[ordered[5]]
    serve(tmp_path / "recs")
    ea, a = crawler_on(bus, "/test/a")
    eb, b = crawler_on(bus, "/test/b")
    try:
        assert a.install(mtime=0, fields=[], content_cats=[], source_cats=[], max_batch_size=4) is True
        assert b.install(mtime=middle, fields=["title"], content_cats=[], source_cats=[], max_batch_size=3) is True
        got_a, got_b = take_until_idle(a), take_until_idle(b)

        def introspect(bus_name: str, path: str) -> str:
            return ea.call(new_method_call(
                DBusAddress(path, bus_name=bus_name, interface="org.freedesktop.DBus.Introspectable"), "Introspect"))[0]

        target_xml = introspect(TARGET_NAME, "/org/freedesktop/xesam/pmh/Target")
        crawler_xml = introspect(eb.unique_name, "/test/b")
    finally:
        ea.close()
        eb.close()
    assert uris(got_a) == ordered
    assert uris(got_b) == [u for u in ordered if served[u] > middle]
    assert max(len(e.payloads) for e in got_a) <= 4 and max(len(e.payloads) for e in got_b) <= 3
    fields_b = {name for e in got_b for p in e.payloads for name, _ in p.fields}
    assert fields_b == {"title"}  # the crawler asked for title only
    for arg in ('name="mtime" type="t"', 'name="max_batch_size" type="u"', 'name="crawler" type="o"', 'type="b"'):
        assert arg in target_xml
    for arg in ('type="a(ssssta(ss))"', '<method name="CleanUp"/>', '<signal name="Invalidated">'):
        assert arg in crawler_xml
    first = got_a[0].payloads[0]
    assert first.fields == (("title", "message 0"), ("tag", "a"), ("tag", "b")) and first.timestamp == ms_to_iso(
        served[first.uri])


def test_categories_filter_and_a_crawler_that_blocks_does_not_stall_the_other(bus, serve, tmp_path):
    served = make_records(tmp_path / "recs", 10)
    running = serve(tmp_path / "recs")
    ea, slow = crawler_on(bus, "/test/slow")
    eb, fast = crawler_on(bus, "/test/fast")
    try:
        slow.install(mtime=0, fields=[], content_cats=[], source_cats=[], max_batch_size=2)
        first = next_event(slow)  # held unanswered: this crawler's storage is "busy"
        fast.install(mtime=0, fields=[], content_cats=["email"], source_cats=[], max_batch_size=2)
        got_fast = take_until_idle(fast)
        assert uris(got_fast) == sorted((u for u in served if int(u[-3:]) % 2 == 0), key=served.get)
        time.sleep(0.3)  # the target keeps the slow crawler's next batch back while its call is open
        assert slow.events.empty()
        session = next(s for s in running.target.crawlers() if s.path == "/test/slow")
        assert session.inflight and session.sent == len(first.payloads)
        first.done()
        rest = take_until_idle(slow)
    finally:
        ea.close()
        eb.close()
    assert uris([first, *rest]) == sorted(served, key=served.get)


def test_new_files_and_deletions_are_pushed_live_as_tombstones(bus, serve, tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 3)
    serve(directory)
    endpoint, crawler = crawler_on(bus, "/test/live")
    try:
        crawler.install(mtime=0, fields=[], content_cats=[], source_cats=[], max_batch_size=10)
        take_until_idle(crawler)
        write_record(directory, "new", uri="file:///mail/new", mtime=5, fields={"title": "late"})
        os.remove(directory / "r001.json")
        write_record(directory, "r002", uri="file:///mail/002", mtime=served["file:///mail/002"], deleted=True,
                     content_cat="email")
        live = take_until_idle(crawler)
    finally:
        endpoint.close()
    payloads = [p for e in live for p in e.payloads]
    assert sorted(p.uri for p in payloads) == ["file:///mail/001", "file:///mail/002", "file:///mail/new"]
    by_uri = {p.uri: p for p in payloads}
    assert by_uri["file:///mail/new"].state == 1 and by_uri["file:///mail/new"].fields == (("title", "late"),)
    for uri in ("file:///mail/001", "file:///mail/002"):
        assert by_uri[uri].state == 2 and by_uri[uri].fields == () and by_uri[uri].content_cat == ""
    # a change seen now sorts after everything sent before, whatever mtime its file claims
    assert min(p.mtime for p in payloads) > max(served.values())
    assert [p.mtime for p in payloads] == sorted(p.mtime for p in payloads)


def test_wrong_signature_and_bad_state_are_refused_and_others_cannot_feed_the_crawler(bus, serve, tmp_path):
    make_records(tmp_path / "recs", 1)
    running = serve(tmp_path / "recs")
    endpoint, crawler = crawler_on(bus, "/test/strict")
    stranger = Endpoint(address=bus)
    try:
        crawler.install(mtime=0, fields=[], content_cats=[], source_cats=[], max_batch_size=10)
        take_until_idle(crawler)
        me = DBusAddress("/test/strict", bus_name=endpoint.unique_name, interface=IFACE_CRAWLER)
        # signature a(sssst): the body is missing
        with pytest.raises(BusError) as wrong:
            running.endpoint.call(new_method_call(me, "UpdateRecords", "a(sssst)", ([("u", "t", "", "", 1)],)))
        assert wrong.value.name == ERR_INVALID_ARGS
        good_ts = ms_to_iso(10**12)
        with pytest.raises(BusError) as bad_state:
            running.endpoint.call(new_method_call(me, "UpdateRecords", UPDATE_RECORDS_SIG,
                                                  ([("u", good_ts, "", "", 7, [])],)))
        assert "state 7" in bad_state.value.message
        with pytest.raises(BusError) as stranger_call:
            stranger.call(new_method_call(me, "UpdateRecords", UPDATE_RECORDS_SIG, ([("u", good_ts, "", "", 1, [])],)))
        assert stranger_call.value.name == "org.freedesktop.DBus.Error.AccessDenied"
        kinds = [next_event(crawler).kind for _ in range(2)]
    finally:
        endpoint.close()
        stranger.close()
    assert kinds == ["rejected", "rejected"] and crawler.events.empty() and crawler.received == 1


class ScriptedTarget:
    """A hand-driven target for what the reference target never does (out-of-order payloads)."""

    def __init__(self, address: str, batches: list[list[tuple] | tuple[str, list[tuple]]]) -> None:
        self.endpoint = Endpoint(address=address)
        self.endpoint.request_name(TARGET_NAME)
        self.batches = batches  # a list of payloads, or (signature, body) for a malformed call
        self.calls: queue.Queue = queue.Queue()
        self.refused: list[BusError] = []
        self.endpoint.export("/org/freedesktop/xesam/pmh/Target",
                             Interface(IFACE_TARGET, {"ListRecords": self._list_records}))

    def _list_records(self, call: Call) -> None:
        call.reply("b", (True,))
        self.calls.put(call.args)
        crawler = DBusAddress(call.args[5], bus_name=call.sender, interface=IFACE_CRAWLER)
        threading.Thread(target=self._feed, args=(crawler,), daemon=True).start()

    def _feed(self, crawler: DBusAddress) -> None:
        for batch in [*self.batches, []]:
            signature, body = batch if isinstance(batch, tuple) else (UPDATE_RECORDS_SIG, batch)
            try:
                self.endpoint.call(new_method_call(crawler, "UpdateRecords", signature, (body,)))
            except BusError as exc:
                self.refused.append(exc)

    def close(self) -> None:
        self.endpoint.close()


def test_out_of_order_payloads_are_stored_and_reported_with_a_code(bus_config, bus, data_root):
    p = [(f"file:///x/{i}", ms_to_iso(ms), "email", "local", 1, [("title", str(i))])
         for i, ms in enumerate([3000, 1000, 2000, 4000])]
    target = ScriptedTarget(bus, [p[:2], p[2:]])  # 1000 after 3000 in one call, 2000 after it in the next
    try:
        published = harvest(bus_config, start_message())
    finally:
        target.close()
    status = final(published)
    assert status["status"] == "completed failure"
    assert codes_of(status, "errors") == [codes.XESAM_OUT_OF_ORDER, codes.XESAM_OUT_OF_ORDER]
    assert [r["uri"] for r in stored(data_root)] == [x[0] for x in p]  # nothing lost


def test_a_call_with_the_wrong_signature_fails_the_harvest_but_the_good_payloads_are_kept(bus_config, bus, data_root):
    good = [(f"file:///y/{i}", ms_to_iso(1000 * (i + 1)), "email", "local", 1, [("title", str(i))]) for i in range(3)]
    wrong = ("a(sssst)", [("file:///y/bad", ms_to_iso(1500), "email", "local", 1)])
    target = ScriptedTarget(bus, [good[:1], wrong, good[1:]])
    try:
        status = final(harvest(bus_config, start_message()))
    finally:
        target.close()
    assert [e.name for e in target.refused] == [ERR_INVALID_ARGS]
    assert status["status"] == "completed failure"
    assert codes_of(status, "errors") == [codes.XESAM_BAD_PAYLOAD]
    assert [r["uri"] for r in stored(data_root)] == [g[0] for g in good]


def test_a_too_old_mtime_gets_false_then_cleanup_first_then_a_dump_without_tombstones(bus, serve, tmp_path):
    directory = tmp_path / "recs"
    served = make_records(directory, 4)
    write_record(directory, "gone", uri="file:///mail/gone", mtime=1, deleted=True)
    running = serve(directory, horizon_ms=max(served.values()) + 10)
    endpoint, crawler = crawler_on(bus, "/test/full")
    try:
        assert crawler.install(mtime=max(served.values()), fields=[], content_cats=[], source_cats=[],
                               max_batch_size=10) is False
        events = take_until_idle(crawler)
    finally:
        endpoint.close()
    assert events[0].kind == "cleanup"
    assert uris(events[1:]) == sorted(served, key=served.get)  # everything, but not the old tombstone
    assert running.target.index.entries["file:///mail/gone"].deleted
