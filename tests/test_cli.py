"""The `swath` command as a user runs it: a real process, real HTTP, real files."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from swath.cli import cli
from tests.enginekit import SECRET, PagedApi, wait_for
from tests.fakes.httpserver import FakeServer


def swath(
    *args: str, data_root: Path, stdin: str | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "swath", "--data-root", str(data_root), *args],
                          input=stdin, capture_output=True, text=True, timeout=300,
                          env={**os.environ, **(env or {})})


def all_commands(group: click.Group, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = [prefix]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            out += all_commands(command, prefix + (name,))
        else:
            out.append(prefix + (name,))
    return out


@pytest.mark.parametrize("path", all_commands(cli), ids=lambda p: " ".join(p) or "swath")
def test_every_command_has_help(path):
    result = CliRunner().invoke(cli, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output and len(result.output.splitlines()) > 3


def json_lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_harvest_run_prints_the_messages_a_worker_would_publish(data_root, tmp_path):
    with FakeServer() as server:
        api = PagedApi(server, pages=4)
        message = {"id": "cli:1", "type": "generic_pages", "path": "collections/cs/c1",
                   "seeds": [{"id": "s1", "token": server.url + "/pages?page=1"}],
                   "credentials": {"api_key": SECRET},
                   "collection_set": {"id": "cs"}, "collection": {"id": "c1"}}
        (tmp_path / "start.json").write_text(json.dumps(message))
        result = swath("harvest", "run", str(tmp_path / "start.json"), data_root=data_root)
    assert result.returncode == 0, result.stderr
    published = json_lines(result.stdout)
    keys = [p["routing_key"] for p in published]
    assert keys[0] == "harvest.status.generic.generic_pages" and published[0]["message"]["status"] == "running"
    assert keys[-1] == "harvest.status.generic.generic_pages" and "warc_created" in keys
    final = published[-1]["message"]
    assert final["status"] == "completed success"
    assert sum(day["items"] for day in final["stats"].values()) == len(api.served) == 4 * api.per_page
    assert SECRET not in result.stdout + result.stderr
    for p in published:
        if p["routing_key"] == "warc_created":
            assert Path(p["message"]["warc"]["path"]).is_file()


def test_harvest_run_from_stdin_with_bad_messages(data_root):
    result = swath("harvest", "run", "-", data_root=data_root, stdin="{not json")
    assert result.returncode == 2 and "not JSON" in result.stderr
    bad_type = json.dumps({"id": "x", "type": "nonesuch", "path": "p"})
    result = swath("harvest", "run", "-", data_root=data_root, stdin=bad_type)
    assert result.returncode == 2 and "nonesuch" in result.stderr
    outside = json.dumps({"id": "x", "type": "generic_pages", "path": "/etc", "seeds": []})
    result = swath("harvest", "run", "-", data_root=data_root, stdin=outside)
    assert result.returncode == 1
    final = json_lines(result.stdout)[-1]["message"]
    assert final["status"] == "completed failure"
    assert final["errors"][0]["code"] == "path_outside_data_root"


def test_worker_list_json_names_a_worker_for_every_harvest_and_export_type(data_root):
    workers = json.loads(swath("worker", "--list", "--json", data_root=data_root).stdout)
    bindings = {b for w in workers for b in w["bindings"]}
    harvest_types = json.loads(swath("harvest", "types", "--json", data_root=data_root).stdout)
    export_types = json.loads(swath("export", "types", "--json", data_root=data_root).stdout)
    for row in harvest_types + export_types:
        noun, verb, platform, _type = row["routing_key"].split(".")
        assert f"{noun}.{verb}.{platform}.*" in bindings, row


def test_unknown_worker_is_a_usage_error(data_root):
    result = swath("worker", "nonesuch_harvester", data_root=data_root)
    assert result.returncode == 2 and "swath worker --list" in result.stderr


def test_demo_harvests_and_exports_everything_the_replay_served(data_root):
    result = swath("demo", "--json", data_root=data_root)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    from swath.demo import _recorded_blog

    served_ids = {p["id_string"] for p in _recorded_blog()["posts"]}
    final = out["harvest"][-1]["message"]
    assert sum(day["posts"] for day in final["stats"].values()) == len(served_ids)
    exports = list((data_root / "exports").rglob("*.csv"))
    assert len(exports) == 1
    with exports[0].open(newline="", encoding="utf-8") as fh:
        assert {row["tumblr_id"] for row in csv.DictReader(fh)} == served_ids
    assert out["export"][-1]["message"]["status"] == "completed success"


def test_harvest_run_also_runs_a_validated_source_by_name(data_root):
    with FakeServer() as server:
        api = PagedApi(server, pages=2)
        env = {"SWATH_TEST_KEY": SECRET, "SWATH_DB_URL": f"sqlite:///{data_root / 'store.sqlite'}"}
        assert swath("harvest", "create", "pages", "--type", "generic_pages", "--seed", server.url + "/pages?page=1",
                     "--credential", "api_key=env:SWATH_TEST_KEY", data_root=data_root, env=env).returncode == 0
        refused = swath("harvest", "run", "pages", data_root=data_root, env=env)
        assert refused.returncode != 0 and "source_not_validated" in refused.stderr + refused.stdout
        assert swath("harvest", "validate", "pages", data_root=data_root, env=env).returncode == 0
        result = swath("harvest", "run", "pages", data_root=data_root, env=env)
        assert result.returncode == 0, result.stderr
        jobs = json.loads(swath("harvest", "jobs", "pages", "--json", data_root=data_root, env=env).stdout)
    assert [job["status"] for job in jobs] == ["completed success"]
    assert len(api.served) == 2 * api.per_page


def _big_export(data_root: Path, tmp_path: Path, export_id: str) -> subprocess.Popen:
    """`swath export run` of 30,000 generated tweets with two reader processes, started and running."""
    from tests.generated import generate_tweets

    generate_tweets(data_root / "collections" / "s" / "big", tweets=30000, warc_pages=50)
    message = tmp_path / "export.json"
    message.write_text(json.dumps({"id": export_id, "type": "twitter_search_2", "collection": {"id": "big"},
                                   "path": f"exports/{export_id}", "format": "csv", "dedupe": True}))
    proc = subprocess.Popen([sys.executable, "-m", "swath", "--data-root", str(data_root), "export", "run",
                             str(message)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "SWATH_EXPORT_WORKERS": "2"}, start_new_session=True)
    first = json.loads(proc.stdout.readline())  # the `running` status: the export has begun
    assert first["message"]["status"] == "running"
    return proc


def _children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (from /proc; [] once it is gone)."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue  # ended meanwhile
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:  # field 4, after the (command name)
                out.append(int(entry))
    return out


def _readers(pid: int) -> list[int]:
    """An export's reader processes: forked by the fork server, its child."""
    return [r for child in _children(pid) for r in _children(child)]


def _descendants(pid: int) -> list[int]:
    children = _children(pid)
    return children + [d for child in children for d in _descendants(child)]


def _ignores_sigint(pid: int) -> bool:
    """SIGINT is in the process's ignored set (SigIgn in /proc/PID/status)."""
    import signal

    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False  # ended meanwhile
    ignored = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)
    return bool(ignored & (1 << (signal.SIGINT - 1)))


def test_export_run_interrupted_stops_and_keeps_no_files(data_root, tmp_path):
    """Ctrl-C (SIGINT to the export and its reader processes) ends `swath export run` with exit code 3,
    a completed failure status, and no files, finished or not, in the export's directory."""
    import signal

    proc = _big_export(data_root, tmp_path, "stopped")
    # Ctrl-C once the readers run (they, and the fork server, ignore SIGINT by then; a Ctrl-C while the fork
    # server is still starting up is a separate case, see the report on exporters/reader.py)
    wait_for(lambda: _readers(proc.pid) and all(_ignores_sigint(p) for p in _descendants(proc.pid)),
             what="the export's reader processes, running and ignoring SIGINT")
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 3, err
    final = json.loads(out.strip().splitlines()[-1])["message"]
    assert final["status"] == "completed failure"
    assert "Traceback" not in err
    assert "stopping: the export ends within a batch" in err  # the Ctrl-C says what it does, as harvest run's
    assert list((data_root / "exports" / "stopped").iterdir()) == []


def test_export_run_with_a_reader_killed_fails_clearly_and_keeps_no_files(data_root, tmp_path):
    """A reader process killed mid-export (say by the out-of-memory killer): the export ends with a
    failure that says so, exit code 1, and no files; nothing hangs."""
    import signal

    proc = _big_export(data_root, tmp_path, "killed")
    wait_for(lambda: _readers(proc.pid), what="the export's reader processes")
    os.kill(_readers(proc.pid)[0], signal.SIGKILL)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    final = json.loads(out.strip().splitlines()[-1])["message"]
    assert final["status"] == "completed failure"
    error_message = final["errors"][0]["message"]
    assert "reader process" in error_message and "SWATH_EXPORT_WORKERS=1" in error_message
    assert list((data_root / "exports" / "killed").iterdir()) == []
