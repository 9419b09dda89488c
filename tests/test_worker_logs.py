"""What a worker's log says, read from real `swath worker` processes: one line per job start and end (id, type,
outcome, seconds) for harvest and export workers, and at SIGTERM what was running and what went back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from swath.core.config import Config
from swath.messages.worker import wait_for
from tests.enginekit import SECRET, PagedApi, StreamApi, start_message
from tests.fakes.httpserver import FakeServer
from tests.requesterkit import cli_env


class LoggedWorker:
    """`swath worker NAME` in a subprocess, its stderr collected line by line by a reader thread."""

    def __init__(self, config: Config, name: str) -> None:
        self.name = name
        self.process = subprocess.Popen([sys.executable, "-m", "swath", "worker", name], stderr=subprocess.PIPE,
                                        text=True, env={**os.environ, **cli_env(config)})
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        found: list[re.Match[str]] = []

        def seen() -> bool:
            found[:] = [m for line in list(self.lines) if (m := re.search(pattern, line))]
            return bool(found)

        assert wait_for(seen, timeout, interval=0.1), f"no line matching {pattern!r} in:\n" + "\n".join(self.lines)
        return found[0]

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=120)
        self._reader.join(timeout=60)
        return code


@contextmanager
def logged_worker(config: Config, name: str) -> Iterator[LoggedWorker]:
    worker = LoggedWorker(config, name)
    try:
        worker.wait_line(rf"{name} consuming")
        yield worker
    finally:
        if worker.process.poll() is None:
            worker.process.kill()
            worker.process.wait(timeout=60)


def test_a_harvest_worker_logs_each_job_and_what_its_shutdown_hands_back(config: Config, broker) -> None:
    statuses = broker.queue(config.queue_prefix + "requester", ["harvest.status.#"])
    with FakeServer() as server, logged_worker(config, "generic_harvester") as worker:
        PagedApi(server, pages=2)
        StreamApi(server)
        broker.publish("harvest.start.generic.generic_pages",
                       start_message(server.url + "/pages", harvest_id="pages-1", path="c-pages"))
        ended = worker.wait_line(r"job pages-1 ended: generic_pages, (.+), ([\d.]+)s$")
        final = [body for _key, body in broker.drain(statuses)
                 if body["id"] == "pages-1" and body["status"] != "running"]
        assert [body["status"] for body in final] == [ended.group(1)]  # the line tells the status it published
        worker.wait_line(r"job pages-1 started: generic_pages \(harvest\.start\.generic\.generic_pages\)")

        broker.publish("harvest.start.generic.generic_stream",
                       start_message(server.url + "/stream", harvest_id="stream-1", type_="generic_stream",
                                     path="c-stream"))
        worker.wait_line(r"job stream-1 started: generic_stream")
        assert worker.terminate() == 0
    text = "\n".join(worker.lines)
    assert "generic_harvester shutting down: stopping 1 running job(s) (stream-1); unfinished ones go back" in text
    assert re.search(r"job stream-1 ended: generic_stream, interrupted by shutdown; its message goes back to "
                     r"the queue, [\d.]+s", text)
    assert "generic_harvester stopped: 1 message(s) done, 1 handed back to the queue" in text
    assert broker.depth(config.queue_prefix + "generic_harvester") == 1  # the stream's start, for the next worker
    assert len([line for line in worker.lines if " started: " in line]) == 2 and SECRET not in text


def test_an_export_worker_logs_each_export(config: Config, broker) -> None:
    statuses = broker.queue(config.queue_prefix + "requester", ["export.status.#"])
    body = {"id": "exp-1", "type": "tumblr_blog_posts", "path": "exports/exp-1", "format": "csv",
            "collection": {"id": "nothing-harvested"}, "dedupe": False, "segment_size": None}
    with logged_worker(config, "tumblr_exporter") as worker:
        broker.publish("export.start.tumblr.tumblr_blog_posts", body)
        ended = worker.wait_line(r"job exp-1 ended: tumblr_blog_posts, (.+), ([\d.]+)s$")
        worker.wait_line(r"job exp-1 started: tumblr_blog_posts \(export\.start\.tumblr\.tumblr_blog_posts\)")
        final = [b for _key, b in broker.drain(statuses) if b["status"] != "running"]
        assert [b["status"] for b in final] == [ended.group(1)]
        assert worker.terminate() == 0
    assert any("tumblr_exporter shutting down: no job running" in line for line in worker.lines)


FORGED = "2026-11-27 09:00:00,000 ERROR swath.messages.worker: FORGED"


def test_line_breaks_in_message_values_cannot_forge_log_lines(config: Config, broker) -> None:
    # ids go into log lines as they are: a line break in one must not start a line that reads as a record
    with logged_worker(config, "generic_harvester") as worker:
        refused = {"id": f"bad\n{FORGED} refused\r\x1b[2K", "type": "generic_nothing", "path": "c"}
        broker.publish("harvest.start.generic.generic_nothing", refused)
        worker.wait_line(r"refusing message on harvest\.start\.generic\.generic_nothing")
        failing = start_message("http://127.0.0.1:9/pages", harvest_id=f"h\n{FORGED} harvest", path="c")
        broker.publish("harvest.start.generic.generic_pages", failing)
        worker.wait_line(r"FORGED harvest.*: completed failure")
        assert worker.terminate() == 0
    record = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")
    forged = [line for line in worker.lines if line.startswith(FORGED)]
    assert forged == [] and all(record.match(line) or line.startswith(" ") for line in worker.lines)
    assert not any("\r" in line or "\x1b" in line for line in worker.lines)  # nor rewrite a terminal's line
