"""`swath harvest create --credential` as a user runs it: a real process reading the value from a terminal
(a real pseudo-terminal), stdin, a file or a FIFO, so the value never is in its argv (/proc/<pid>/cmdline)."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from swath.core.config import Config
from swath.requester import Requester
from swath.store import Store, repo
from swath.store.secrets import SecretBox
from tests.requesterkit import TEST_SECRET_KEY, cli_env

SECRET = "flickr-secret-7Hc2-only-typed"
OTHER = "twitter-token-Pq0x-from-a-file"
DEADLINE = 60.0  # seconds for things that take well under one


def command(*credential_args: str) -> list[str]:
    return [sys.executable, "-m", "swath", "--log-level", "WARNING", "harvest", "create", "blog", "--type",
            "generic_pages", "--seed", "http://127.0.0.1:9/", *credential_args, "--json"]


def env_of(config: Config, **extra: str) -> dict[str, str]:
    return {**os.environ, **cli_env(config), **extra}


def cmdline(pid: int) -> bytes:
    return Path(f"/proc/{pid}/cmdline").read_bytes()


def stored(config: Config, name: str = "blog") -> dict:
    """The credentials the source's harvest.start would carry, opened with the test key."""
    req = Requester(config=config, store=Store(url=config.db_url), env={"BLOG_TOKEN": "from-env"},
                    box=SecretBox(keys=(TEST_SECRET_KEY,)))
    try:
        with req.store.session() as s:
            source = repo.find_source(s, name)
        return req.harvest_start(source, "job-1")["credentials"]
    finally:
        req.store.close()


def _controlling_terminal() -> None:  # in the child, after setsid: the pty on fd 0 becomes its terminal
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def read_until(fd: int, wanted: bytes, deadline: float) -> bytes:
    seen = b""
    while wanted not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"no {wanted!r} from the terminal; got {seen!r}"
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def drain(fd: int) -> bytes:
    """What the terminal still holds once the child exited (EIO or EOF ends it)."""
    seen = b""
    while select.select([fd], [], [], 0)[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_prompt_on_a_terminal_hides_the_value_and_keeps_it_out_of_argv(config: Config) -> None:
    master, slave = os.openpty()
    proc = subprocess.Popen(command("--credential", "api_key", "--credential", "token=env:BLOG_TOKEN"),
                            stdin=slave, stdout=subprocess.PIPE, stderr=slave, env=env_of(config),
                            start_new_session=True, preexec_fn=_controlling_terminal)
    os.close(slave)
    try:
        deadline = time.monotonic() + DEADLINE
        prompt = read_until(master, b"Value of credential api_key", deadline)
        argv = cmdline(proc.pid)  # the process is waiting at the prompt, alive, as `ps` would see it
        os.write(master, SECRET.encode() + b"\n")
        out, _ = proc.communicate(timeout=DEADLINE)
        echoed = prompt + drain(master)
    finally:
        proc.kill()
        os.close(master)
    assert proc.returncode == 0, out
    assert b"harvest" in argv and b"api_key" in argv and SECRET.encode() not in argv
    assert SECRET.encode() not in echoed  # getpass turned the echo off
    src = json.loads(out)
    assert src["credentials"] == {"api_key": "stored", "token": "env:BLOG_TOKEN"} and SECRET not in out.decode()
    assert stored(config) == {"api_key": SECRET, "token": "from-env"}


def test_a_value_from_stdin_when_it_is_not_a_terminal(config: Config) -> None:
    done = subprocess.run(command("--credential", "api_key=-"), input=f"{SECRET}\n", capture_output=True, text=True,
                          env=env_of(config), timeout=DEADLINE)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr and "warning" not in done.stderr
    assert stored(config) == {"api_key": SECRET}


def test_values_from_a_fifo_and_a_file_never_reach_argv_while_a_value_on_the_command_line_does(
        config: Config, tmp_path: Path) -> None:
    fifo = tmp_path / "api_key.fifo"
    os.mkfifo(fifo, 0o600)
    token_file = tmp_path / "token.txt"
    token_file.write_text(OTHER + "\n")
    visible = "typed-on-the-command-line-3x"
    proc = subprocess.Popen(command("--credential", f"api_key=@{fifo}", "--credential-file", f"token={token_file}",
                                    "--credential", f"shown={visible}"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env_of(config))
    try:
        with fifo.open("w") as writer:  # opens once the process opened the FIFO to read: it is alive and waiting
            argv_while_reading = cmdline(proc.pid)
            writer.write(SECRET + "\n")
        out, err = proc.communicate(timeout=DEADLINE)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert SECRET.encode() not in argv_while_reading and OTHER.encode() not in argv_while_reading
    assert visible.encode() in argv_while_reading  # what `ps` shows: the reason NAME=VALUE warns
    assert b"warning: --credential shown=VALUE puts the value in the process list" in err
    assert not any(s.encode() in out + err for s in (SECRET, OTHER, visible))
    assert stored(config) == {"api_key": SECRET, "token": OTHER, "shown": visible}


@pytest.mark.parametrize("args, says", [
    (["--credential", "api_key=@/nonexistent/key"], "cannot read /nonexistent/key"),
    (["--credential-file", "api_key"], "--credential-file is NAME=PATH"),
    (["--credential", "api_key=@/dev/null"], "is empty"),
    (["--credential", "api_key=env:X", "--credential-file", "api_key=/dev/null"], "given twice"),
    (["--credential", "api_key="], "empty value"),
    (["--credential", f"{SECRET}!"], "a credential name is"),  # a value typed without its name is not echoed
])
def test_bad_credential_options_are_refused_with_a_code(config: Config, args: list[str], says: str) -> None:
    done = subprocess.run(command(*args), input="", capture_output=True, text=True, env=env_of(config),
                          timeout=DEADLINE)
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "bad_request" and says in error["message"] and SECRET not in done.stdout + done.stderr
    with Store(url=config.db_url).session() as s:
        assert repo.list_sources(s) == []


def test_a_placeholder_left_from_harvest_example_is_refused_when_the_source_is_made(config: Config) -> None:
    given = ((["--credential", "api_key=YOUR_API_KEY"], ""), (["--credential", "api_key"], "YOUR_API_KEY\n"))
    for args, stdin in given:
        done = subprocess.run(command(*args), input=stdin, capture_output=True, text=True, env=env_of(config),
                              timeout=DEADLINE)
        assert done.returncode == 1, done.stderr
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "credential_placeholder" and "give the real value" in error["message"]
    with Store(url=config.db_url).session() as s:
        assert repo.list_sources(s) == []  # not stored to fail at every launch


def test_the_help_says_where_values_come_from() -> None:
    from swath.cli import cli

    text = " ".join(CliRunner().invoke(cli, ["harvest", "create", "--help"], terminal_width=200).output.split())
    for phrase in ("NAME alone or NAME=- prompts", "NAME=@FILE", "NAME=env:VAR", "process list",
                   "SWATH_SECRET_KEY", "--credential-file NAME=PATH"):
        assert phrase in text, phrase
