"""What a new user meets, as a real `swath` process: each mistake is one line saying what to do (with `--json`,
an {"error": ...} on stdout), never a traceback; `--help` changes nothing on disk; the demo's next step runs."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from click.testing import CliRunner

from swath.cli import cli
from swath.core.config import Config
from swath.shared.snapshot import known_queues
from tests.test_cli import swath


def unwritable(tmp_path: Path) -> Path:
    """A data root that cannot be made, even by root: its parent is a regular file (ENOTDIR)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    return blocker / "data"


def test_web_adduser_help_makes_no_key(data_root: Path) -> None:
    result = CliRunner().invoke(cli, ["--data-root", str(data_root), "web", "adduser", "--help"],
                                env={"SWATH_SECRET_KEY": "", "SWATH_SECRET_KEY_FILE": ""})
    assert result.exit_code == 0 and "Usage:" in result.output
    assert list(data_root.iterdir()) == []  # no .swath/secret.key, no store


def test_store_and_web_commands_on_an_unwritable_data_root_say_so_in_one_line(tmp_path: Path) -> None:
    root = unwritable(tmp_path)
    env = {"SWATH_DB_URL": "", "SWATH_SECRET_KEY": "", "SWATH_SECRET_KEY_FILE": ""}
    for args in (("harvest", "sources"), ("web", "adduser", "ada")):
        result = swath(*args, data_root=root, stdin="a-password-of-length\n", env=env)
        assert result.returncode == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr, args
        (line,) = result.stderr.strip().splitlines()
        assert line.startswith("error [data_root_unwritable]") and "--data-root" in line, line
    listed = swath("harvest", "sources", "--json", data_root=root, env=env)
    assert json.loads(listed.stdout)["error"]["code"] == "data_root_unwritable"


def test_wacz_into_an_unwritable_folder_or_of_an_unindexed_collection_says_what_to_give(data_root: Path,
                                                                                         tmp_path: Path) -> None:
    folder = data_root / "collections" / "set" / "c1"
    folder.mkdir(parents=True)
    output = unwritable(tmp_path) / "out.wacz"
    result = swath("wacz", str(folder), "-o", str(output), data_root=data_root)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error [wacz_failed]: cannot write") and "give -o" in result.stderr
    indexed = swath("wacz", "--collection", "c1", "-o", str(tmp_path / "c1.wacz"), "--json", data_root=data_root,
                    env={"SWATH_DB_URL": ""})
    error = json.loads(indexed.stdout)["error"]
    assert indexed.returncode == 1 and error["code"] == "wacz_failed"
    assert "WARC index holds no WARC of collection 'c1'" in error["message"]
    assert f"swath wacz {data_root}/collections/<set>/c1" in error["message"]


def test_run_refusals_are_json_on_stdout_with_json(data_root: Path, tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"id": "x", "type": ')
    for command in ("harvest", "export"):
        for message, code in ((broken, "not_json"), (tmp_path / "missing.json", "bad_request")):
            result = swath(command, "run", "--json", str(message), data_root=data_root)
            assert result.returncode == 2, result.stderr  # a usage error, as without --json
            assert json.loads(result.stdout)["error"]["code"] == code, (command, message)
            assert str(message.name) in result.stderr


def test_export_run_of_a_message_without_type_names_what_is_missing(data_root: Path) -> None:
    result = swath("export", "run", "--json", "-", data_root=data_root, stdin="{}")
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "schema_invalid" and "'type' is a required property" in error["message"]
    assert "None" not in result.stderr


def test_a_failed_sync_launch_says_why(data_root: Path) -> None:
    env = {"SWATH_DB_URL": ""}
    assert swath("harvest", "create", "blog", "--type", "tumblr_blog_posts", "--seed-uid", "someblog",
                 "--credential", "api_key=env:SWATH_WALK_UNSET_KEY", data_root=data_root, env=env).returncode == 0
    assert swath("harvest", "validate", "blog", data_root=data_root, env=env).returncode == 0
    result = swath("harvest", "launch", "blog", "--sync", data_root=data_root, env=env)
    assert result.returncode == 1
    assert "completed failure" in result.stdout
    assert "error [credential_missing]" in result.stdout and "SWATH_WALK_UNSET_KEY: set it where" in result.stdout


def test_a_misspelt_swath_platforms_is_named_by_worker_list_and_broker_setup(data_root: Path) -> None:
    for args in (("worker", "--list"), ("worker", "--list", "--json"), ("broker", "setup")):
        result = swath(*args, data_root=data_root, env={"SWATH_PLATFORMS": "flikr"})
        assert result.returncode == 2, (args, result.stdout)
        assert "SWATH_PLATFORMS names flikr" in result.stderr and result.stdout == "", args


def test_the_status_page_lists_the_queues_broker_setup_declares() -> None:
    config = Config(platforms=("ckan",), queue_prefix="walk_", status_queue="walk_monitor",
                    dead_letter_queue="walk_dlq")
    assert known_queues(config) == ["walk_monitor", "walk_dlq", "walk_ckan_harvester", "walk_ckan_exporter"]


def test_the_demo_ends_with_a_next_step_that_runs(data_root: Path) -> None:
    demo = swath("demo", data_root=data_root)
    assert demo.returncode == 0, demo.stderr
    last = demo.stdout.strip().splitlines()[-1]
    assert last.startswith("next: `swath harvest example TYPE > start.json`")
    assert "`swath harvest run start.json`" in last
    example = swath("harvest", "example", "tumblr_blog_posts", data_root=data_root)
    assert example.returncode == 0 and json.loads(example.stdout)["type"] == "tumblr_blog_posts"


def test_sfm_import_of_something_that_is_no_database_url_says_what_to_give(data_root: Path) -> None:
    result = swath("sfm", "import", "--db-url", "sfm-password-9x@nowhere", "--dry-run", data_root=data_root)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error [bad_request]: --db-url is not a database URL: give postgresql")
    assert "sfm-password-9x" not in result.stderr  # what was given may hold a password: not echoed


def test_a_server_on_a_port_in_use_says_so_in_one_line(data_root: Path, tmp_path: Path) -> None:
    users = tmp_path / "users"
    users.write_text("ann:a-password\n")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = str(taken.getsockname()[1])
        for args in (("dashboard", "--port", port), ("metashare", "serve", str(tmp_path / "lrs"), "--users",
                                                     str(users), "--port", port)):
            result = swath(*args, data_root=data_root, env={"SWATH_DB_URL": ""})
            assert result.returncode == 1 and "Traceback" not in result.stderr, args
            said = result.stderr.strip().splitlines()[-1]
            assert said == (f"error [listen_failed]: cannot listen on 127.0.0.1:{port} (Address already in use): "
                            "give another --port, or stop what listens there")
