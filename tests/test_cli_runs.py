"""`swath harvest run` as an operator meets it: a message run twice, Ctrl-C, where the data goes (real processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from swath.harvesters.embedded import EXIT_ALREADY_FINISHED, EXIT_INTERRUPTED, INTERRUPTING, STOPPING_STREAM
from tests.enginekit import SECRET, PagedApi, StreamApi, wait_for
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.test_cli import json_lines, swath


def _message(tmp_path: Path, harvest_id: str, htype: str, url: str) -> Path:
    path = tmp_path / f"{harvest_id}.json"
    path.write_text(json.dumps({"id": harvest_id, "type": htype, "path": "collections/cs/c1",
                                "seeds": [{"id": "s1", "token": url}], "credentials": {"api_key": SECRET},
                                "collection_set": {"id": "cs"}, "collection": {"id": "c1"}}))
    return path


class Running:
    """`swath harvest run MESSAGE` in the background, its stdout and stderr collected line by line."""

    def __init__(self, data_root: Path, message: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "swath", "--data-root", str(data_root), "harvest", "run",
                                      str(message)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out: list[str] = []
        self.err: list[str] = []
        self._readers = [threading.Thread(target=self._collect, args=(stream, lines), daemon=True)
                         for stream, lines in ((self.proc.stdout, self.out), (self.proc.stderr, self.err))]
        for reader in self._readers:
            reader.start()

    @staticmethod
    def _collect(stream, lines: list[str]) -> None:
        for line in stream:
            lines.append(line)

    def published(self) -> list[dict]:
        return json_lines("".join(self.out))

    def finish(self) -> int:
        code = self.proc.wait(timeout=300)
        for reader in self._readers:
            reader.join(60)
        return code


def test_running_a_finished_message_again_says_so_with_its_own_exit_code(data_root, tmp_path):
    with FakeServer() as server:
        api = PagedApi(server, pages=2)
        message = _message(tmp_path, "twice", "generic_pages", server.url + "/pages?page=1")
        first = swath("harvest", "run", str(message), data_root=data_root)
        assert first.returncode == 0, first.stderr
        final = json_lines(first.stdout)[-1]["message"]
        served = len(api.served)
        again = swath("harvest", "run", str(message), data_root=data_root)
        as_json = swath("harvest", "run", "--json", str(message), data_root=data_root)
    assert len(api.served) == served  # nothing fetched again
    assert again.returncode == as_json.returncode == EXIT_ALREADY_FINISHED
    assert again.stdout == ""
    assert "already finished (completed success" in again.stderr and "use a new id" in again.stderr.lower()
    (line,) = json_lines(as_json.stdout)
    assert line["error"]["code"] == "already_finished" and "twice" in line["error"]["message"]
    assert line["status"] == final  # the status the first run published, as recorded
    # as docs/requester.md says: a message run here publishes to stdout only, so no job is recorded
    jobs = swath("harvest", "jobs", "--json", data_root=data_root)
    assert jobs.returncode == 0 and json.loads(jobs.stdout) == []


def test_first_ctrl_c_interrupts_a_rest_harvest_says_what_is_kept_and_it_resumes(data_root, tmp_path):
    release = threading.Event()
    with FakeServer() as server:
        pages = PagedApi(server, pages=6)

        @server.route("/pages")  # in front of the PagedApi route: page 3 is held
        def held(request: Request) -> Response:
            if int(request.arg("page", "1")) >= 3:
                release.wait(120)  # the slow server: page 3 answers once the test has sent Ctrl-C
            return pages.handle(request)

        message = _message(tmp_path, "long", "generic_pages", server.url + "/pages?page=1")
        run = Running(data_root, message)
        wait_for(lambda: any(r.arg("page") == "3" for r in server.requests), what="the request for page 3")
        run.proc.send_signal(signal.SIGINT)
        wait_for(lambda: INTERRUPTING in "".join(run.err), what="the first Ctrl-C's notice on stderr")
        release.set()
        assert run.finish() == EXIT_INTERRUPTED, "".join(run.err)
        kept = [p["message"]["warc"]["path"] for p in run.published() if p["routing_key"] == "warc_created"]
        assert kept and all(Path(p).is_file() for p in kept)  # what the notice promised is there
        assert not any(p["message"].get("status", "").startswith("completed") for p in run.published())
        assert "run the same message again to resume" in "".join(run.err)

        resumed = swath("harvest", "run", str(message), data_root=data_root)
        assert resumed.returncode == 0, resumed.stderr
        assert json_lines(resumed.stdout)[-1]["message"]["status"] == "completed success"
    assert max(pages.served) == 6 * pages.per_page - 1  # the resumed run reached the last page


def test_first_ctrl_c_stops_a_stream_cleanly_and_says_so(data_root, tmp_path):
    with FakeServer() as server:
        StreamApi(server, path="/stream", every=0.01)
        run = Running(data_root, _message(tmp_path, "stream", "generic_stream", server.url + "/stream"))
        wait_for(lambda: server.requests, what="the stream's connection")
        run.proc.send_signal(signal.SIGINT)
        wait_for(lambda: STOPPING_STREAM in "".join(run.err), what="the first Ctrl-C's notice on stderr")
        assert run.finish() == 0, "".join(run.err)
    published = run.published()
    final = published[-1]["message"]
    assert final["status"] == "completed success"
    assert sum(day["items"] for day in final["stats"].values()) > 0
    assert any(p["routing_key"] == "warc_created" for p in published)


def test_config_prints_the_effective_data_root_with_secrets_masked(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("SWATH_DATA_ROOT", "SWATH_DB_URL", "XDG_DATA_HOME")}
    env.update(HOME=str(tmp_path / "home"), SWATH_AMQP_URL="amqp://user:hunter2@rabbit:5672/%2F",
               SWATH_SECRET_KEY="key-never-printed")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def config(*args: str, cwd: Path = tmp_path, **more: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "swath", *args, "config", "--json"], cwd=cwd,
                              capture_output=True, text=True, timeout=120, env={**env, **more})

    here, there = config(), config(cwd=elsewhere)
    shown = json.loads(here.stdout)
    expected = tmp_path / "home" / ".local" / "share" / "swath"
    assert shown["data_root"] == json.loads(there.stdout)["data_root"] == str(expected)  # not the cwd
    assert shown["db_url"] == f"sqlite:///{expected / 'swath.sqlite'}"
    assert shown["amqp_url"] == "amqp://user:***@rabbit:5672/%2F" and shown["secret_key"] == "***"
    assert "hunter2" not in here.stdout + here.stderr and "key-never-printed" not in here.stdout + here.stderr
    xdg = json.loads(config(XDG_DATA_HOME=str(tmp_path / "xdg")).stdout)
    assert xdg["data_root"] == str(tmp_path / "xdg" / "swath")

    relative = config(SWATH_DATA_ROOT="rel", cwd=elsewhere)
    assert json.loads(relative.stdout)["data_root"] == str(elsewhere / "rel")
    assert json.loads(relative.stdout)["data_root_from"] == "SWATH_DATA_ROOT"
    assert f"data root {elsewhere / 'rel'}" in relative.stderr  # resolved once, and said
    moved = json.loads(config("--data-root", str(tmp_path / "opt")).stdout)
    assert moved["data_root"] == str(tmp_path / "opt") and moved["db_url"].endswith("/opt/swath.sqlite")
