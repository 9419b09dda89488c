"""Xesam-PMH throughput: payloads per second from the reference target into a crawler, on a private bus.

Floor: empty D-Bus method calls per second between the same two jeepney endpoints (one round trip
each), measured in the same run. Each crawl answers every UpdateRecords at once (no storage), so the
figure is the protocol's ceiling; a harvest adds the WARC writing before each answer.

    .venv/bin/python bench/bench_xesam.py --records 20000 --batches 1 100 1000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from jeepney import DBusAddress, new_method_call

from swath.platforms.xesam.bus import Endpoint, Interface
from swath.platforms.xesam.crawler import Crawler
from swath.platforms.xesam.target import Target

NAME = "org.swath.bench.Target"


def floor(address: str, calls: int) -> float:
    server, client = Endpoint(address=address), Endpoint(address=address)
    server.export("/ping", Interface("org.swath.Bench", {"Ping": lambda call: call.reply()}))
    target = DBusAddress("/ping", bus_name=server.unique_name, interface="org.swath.Bench")
    start = time.perf_counter()
    for _ in range(calls):
        client.call(new_method_call(target, "Ping"))
    elapsed = time.perf_counter() - start
    server.close()
    client.close()
    return calls / elapsed


def crawl(address: str, records: int, batch: int) -> tuple[float, int]:
    endpoint = Endpoint(address=address)
    crawler = Crawler(endpoint=endpoint, path="/bench/crawler", target_name=NAME)
    start = time.perf_counter()
    crawler.install(mtime=0, fields=[], content_cats=[], source_cats=[], max_batch_size=batch)
    got = 0
    while True:
        event = crawler.events.get(timeout=60)
        event.done()
        got += len(event.payloads)
        if event.kind == "batch" and not event.payloads:
            break
    elapsed = time.perf_counter() - start
    crawler.invalidate("bench done")
    endpoint.close()
    return got / elapsed, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 100, 1000])
    args = parser.parse_args()
    daemon = subprocess.Popen([shutil.which("dbus-daemon"), "--session", "--print-address", "--nofork"],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    work = Path(tempfile.mkdtemp(prefix="bench-xesam-"))
    try:
        address = daemon.stdout.readline().strip()
        for i in range(args.records):
            (work / f"r{i:06d}.json").write_text(json.dumps(
                {"uri": f"file:///r/{i}", "mtime": 1_000_000 + i, "content_cat": "email", "source_cat": "local",
                 "fields": {"title": f"record {i}", "body": "x" * 200}}))
        target_endpoint = Endpoint(address=address)
        target_endpoint.request_name(NAME)
        target = Target(endpoint=target_endpoint, directory=work, poll=3600)
        target.start()
        base = floor(address, 2000)
        print(f"floor: {base:,.0f} empty calls/s")
        for batch in args.batches:
            rate, got = crawl(address, args.records, batch)
            assert got == args.records, f"crawler got {got} of {args.records} payloads"
            print(f"max_batch_size {batch:>5}: {rate:,.0f} payloads/s  ({rate / base:.2f} x floor)")
        target.stop()
        target_endpoint.close()
    finally:
        daemon.terminate()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
