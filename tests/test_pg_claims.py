"""One runner per harvest without a shared filesystem (issue 36): the PostgreSQL advisory-lock claim, its fencing
token and the collection's state in the store, on the real PostgreSQL. Runners are separate processes
(tests/pg_claim_child.py), each with its own connection, as on separate hosts."""

from __future__ import annotations

import dataclasses
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from swath.core.jobs import JobInterrupted
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.store.harvest_state import PgCoordination
from swath.store.pg_claim import lock_key
from tests.enginekit import PagedApi, context, page_item_ids, routing_key, start_message, wait_for, warc_files
from tests.fakes.httpserver import FakeServer
from tests.requesterkit import pg_url  # noqa: F401  (fixture)

ROOT = Path(__file__).resolve().parents[1]
ANSWER = 120.0  # seconds a runner may take to answer: only a guard against a hang on a busy machine


class Runner:
    """A runner process: commands in, one answer line each out."""

    def __init__(self, url: str, harvest_id: str, data_root: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.pg_claim_child", url, harvest_id, str(data_root)],
                                     cwd=ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put("<exited>")

    def send(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def answer(self) -> str:
        return self.lines.get(timeout=ANSWER)

    def ask(self, command: str) -> str:
        self.send(command)
        return self.answer()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(60)


@pytest.fixture
def runners(pg_url, tmp_path):  # noqa: F811
    made: list[Runner] = []
    harvest_id = f"pg:{uuid.uuid4().hex[:8]}"

    def runner() -> Runner:
        root = tmp_path / f"host{len(made)}"  # no shared data root: each runner its own folder
        root.mkdir()
        made.append(Runner(pg_url, harvest_id, root))
        return made[-1]

    runner.harvest_id = harvest_id  # type: ignore[attr-defined]
    yield runner
    for r in made:
        r.close()


def token_of(answer: str) -> int:
    word, token = answer.split()
    assert word == "acquired", answer
    return int(token)


def stored_state(url: str, key: str) -> object:
    engine = create_engine(url)
    with engine.connect() as conn:
        value = conn.execute(text("SELECT value FROM harvest_state WHERE scope = 'coll' AND key = :k"),
                             {"k": key}).scalar()
    engine.dispose()
    return None if value is None else json.loads(value)


def test_two_runners_racing_for_one_harvest_exactly_one_wins(runners, pg_url):  # noqa: F811
    first, second = runners(), runners()
    for r in (first, second):  # both ask before either answers
        r.send("try")
    answers = {first: first.answer(), second: second.answer()}
    winners = [r for r, answer in answers.items() if answer != "busy"]
    assert len(winners) == 1 and "busy" in answers.values(), answers
    assert token_of(answers[winners[0]]) >= 1
    coordination = PgCoordination(config=_config(pg_url))
    outsider = coordination.claim(runners.harvest_id, instance="test")
    assert not outsider.try_acquire()  # a third session is kept out too
    pid = winners[0].proc.pid
    assert outsider.holder() == f"pid {pid} on {os.uname().nodename} (worker child-{pid})"
    outsider.release()
    coordination.engine.dispose()


def test_kill_9_frees_the_claim_for_the_waiter_with_a_higher_token(runners):
    holder, waiter = runners(), runners()
    first = token_of(holder.ask("try"))
    assert waiter.ask("try") == "busy"
    waiter.send("wait")
    holder.proc.send_signal(signal.SIGKILL)
    holder.proc.wait(60)
    second = token_of(waiter.answer())  # the server ended the dead holder's session, and its lock with it
    assert second == first + 1
    assert waiter.ask("check") == "ok"


def test_a_stale_runners_late_commit_is_refused_and_changes_nothing(runners, pg_url):  # noqa: F811
    stale, fresh = runners(), runners()
    first = token_of(stale.ask("try"))
    assert stale.ask("commit since 1") == "committed"
    # the server drops the stale runner's session (as keepalives do when its host goes silent): its lock goes
    admin = create_engine(pg_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        ended = conn.execute(text("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                                  "WHERE application_name = :name"),
                             {"name": f"swath claim {runners.harvest_id}"[:63]}).scalar()
    admin.dispose()
    assert ended == 1
    second = token_of(fresh.ask("wait"))
    assert second == first + 1
    assert fresh.ask("get since") == "1"  # what the first runner committed, read from the store
    assert stale.ask("commit since 2") == f"refused {codes.CLAIM_FENCED}"
    assert stale.ask("check").startswith("lost ")
    assert stored_state(pg_url, "since") == 1
    assert fresh.ask("commit since 3") == "committed"
    assert stored_state(pg_url, "since") == 3


def test_lock_keys_are_stable_64_bit_numbers():
    assert lock_key("h:1") == lock_key("h:1") != lock_key("h:2")
    assert -(2**63) <= lock_key("h:1") < 2**63


def _config(url: str, s3=None, **changes):
    """A Config with its claims and state in the store at `url`; `s3` (the s3_config fixture): its WARCs go to
    that real bucket (a harvest uploads them), else an s3:// URL that only chooses the store's coordination."""
    from swath.core.config import Config

    storage = {"storage_url": "s3://bucket/prefix"} if s3 is None else {
        name: getattr(s3, name) for name in ("storage_url", "storage_endpoint", "storage_access_key_id",
                                             "storage_secret_access_key")}
    return dataclasses.replace(Config(db_url=url, **storage), **changes)


def _stored(seaweed, s3_config) -> list[bytes]:
    """Every WARC in the test's bucket."""
    bucket, _, prefix = s3_config.storage_url.removeprefix("s3://").partition("/")
    client = seaweed.client()
    return [client.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()
            for o in client.list_objects_v2(Bucket=bucket, Prefix=prefix + "/").get("Contents", [])]



def test_a_harvest_interrupted_on_one_host_resumes_on_another_from_the_store(pg_url, tmp_path, s3_config,  # noqa: F811
                                                                             seaweed):
    pages, per_page = 40, 5
    hosts = [tmp_path / "host-a", tmp_path / "host-b"]  # no shared data root: the journal is in the store
    configs = [_config(pg_url, s3_config, data_root=root, warc_max_bytes=2500) for root in hosts]
    coordination = PgCoordination(config=configs[0])
    harvest_id = f"pg-resume:{uuid.uuid4().hex[:8]}"
    with FakeServer() as server:
        api = PagedApi(server, pages=pages, per_page=per_page, delay=0.01)
        message = start_message(server.url + "/pages", harvest_id=harvest_id, path=f"coll-{harvest_id[-8:]}")
        ctx, _ = context(configs[0])
        errors: list[BaseException] = []

        def run() -> None:
            try:
                run_harvest(message, routing_key=routing_key(), ctx=ctx, coordination=coordination)
            except BaseException as exc:  # noqa: BLE001 - handed to the test thread
                errors.append(exc)

        thread = threading.Thread(target=run)
        thread.start()
        try:
            wait_for(lambda: len(_stored(seaweed, s3_config)) >= 2 and len(api.served) >= 10 * per_page,
                     what="two WARCs stored and 10 pages served by host a")
        finally:
            ctx.shutdown.set()
            ctx.stop.set()
        thread.join(120)
        assert not thread.is_alive() and len(errors) == 1 and isinstance(errors[0], JobInterrupted), errors
        first_run = len(api.served)
        assert first_run < pages * per_page
        ctx, published = context(configs[1])
        run_harvest(message, routing_key=routing_key(), ctx=ctx,
                    coordination=PgCoordination(config=configs[1]))
        served = len(api.served)
        # the start delivered once more, to a third host: the store's final-status record says it is finished
        third = _config(pg_url, s3_config, data_root=tmp_path / "host-c")
        ctx, again = context(third)
        run_harvest(message, routing_key=routing_key(), ctx=ctx, coordination=PgCoordination(config=third))
        assert again.messages == [] and len(api.served) == served
    final = published.statuses[-1]
    assert final["status"] == "completed success", final["errors"]
    assert codes.HARVEST_RESUMED in [w["code"] for w in final["warnings"]]
    resumed_from = api.served[first_run]
    assert resumed_from > 0, "host b went on from host a's last committed page, not from the first"
    stored = tmp_path / "stored"
    stored.mkdir()
    for n, data in enumerate(_stored(seaweed, s3_config)):
        (stored / f"{n}.warc.gz").write_bytes(data)
    recorded = page_item_ids(warc_files(stored))
    assert sorted(recorded) == list(range(pages * per_page))  # nothing lost between the hosts, nothing twice
    assert warc_files(hosts[0]) == warc_files(hosts[1]) == []  # each host's staging folder emptied
    counted = sum(day.get("items", 0) for day in final["stats"].values())
    assert counted == pages * per_page, "the counts went on from the store's journal"


def test_incremental_state_written_by_one_harvest_is_read_by_the_next_from_the_store(pg_url, tmp_path,  # noqa: F811
                                                                                    s3_config):
    path = f"coll-{uuid.uuid4().hex[:8]}"
    with FakeServer() as server:
        api = PagedApi(server, pages=3, per_page=4)
        for n, root in enumerate((tmp_path / "host-a", tmp_path / "host-b")):
            config = _config(pg_url, s3_config, data_root=root)
            message = start_message(server.url + "/pages", harvest_id=f"{path}:{n}", path=path,
                                    options={"incremental": True})
            ctx, published = context(config)
            run_harvest(message, routing_key=routing_key(), ctx=ctx, coordination=PgCoordination(config=config))
            assert published.statuses[-1]["status"] == "completed success"
        since = [r.arg("since_id") for r in server.requests_to("/pages")]
    newest = 3 * 4 - 1
    assert since == [None] * 3 + [str(newest)] * 3  # the second harvest (another host) sent the first's newest id
    assert api.served[12:] == []  # and got nothing new
    assert not list((tmp_path / "host-a").rglob("swath-state.json")), "the state went to the store, not a file"


def test_object_storage_without_a_postgresql_store_refuses_the_start_with_a_code(tmp_path):
    from swath.core.config import Config

    config = Config(data_root=tmp_path, db_url=f"sqlite:///{tmp_path / 's.sqlite'}", storage_url="s3://b/p")
    for coordination in (None, PgCoordination(config=config)):
        _assert_refused(config, coordination)
    assert not list(tmp_path.rglob("*.warc.gz"))


@pytest.mark.services  # a PostgreSQL driver connects (to a port where nothing listens)
def test_an_unreachable_postgresql_store_refuses_the_start_with_a_code_and_no_password(tmp_path):
    from swath.core.config import Config

    config = Config(data_root=tmp_path, db_url="postgresql://swath:hunter2secret@127.0.0.1:1/swath",
                    storage_url="s3://b/p")
    published = _assert_refused(config, PgCoordination(config=config))
    assert "hunter2secret" not in json.dumps(published.messages)
    assert not list(tmp_path.rglob("*.warc.gz"))


def _assert_refused(config, coordination):
    message = start_message("http://127.0.0.1:9/pages")
    ctx, published = context(config)
    run_harvest(message, routing_key=routing_key(), ctx=ctx, coordination=coordination)
    final = published.statuses[-1]
    assert (final["status"], [e["code"] for e in final["errors"]]) == (
        "completed failure", [codes.CLAIM_STORE_UNAVAILABLE])
    return published


def test_swath_harvest_run_on_two_hosts_finds_the_first_hosts_final_status_in_the_store(pg_url, tmp_path,  # noqa: F811
                                                                                        s3_config):
    from swath.harvesters.embedded import EXIT_ALREADY_FINISHED
    from tests.test_cli import json_lines, swath

    env = {"SWATH_STORAGE_URL": s3_config.storage_url, "SWATH_STORAGE_ENDPOINT": s3_config.storage_endpoint,
           "SWATH_STORAGE_ACCESS_KEY_ID": s3_config.storage_access_key_id,
           "SWATH_STORAGE_SECRET_ACCESS_KEY": s3_config.storage_secret_access_key, "SWATH_DB_URL": pg_url}
    harvest_id = f"cli:{uuid.uuid4().hex[:8]}"
    with FakeServer() as server:
        api = PagedApi(server, pages=2)
        message = tmp_path / "start.json"
        message.write_text(json.dumps(start_message(server.url + "/pages?page=1", harvest_id=harvest_id,
                                                    path=f"coll-{harvest_id[-8:]}")))
        first = swath("harvest", "run", str(message), data_root=tmp_path / "host-a", env=env)
        assert first.returncode == 0, first.stderr
        served = len(api.served)
        again = swath("harvest", "run", "--json", str(message), data_root=tmp_path / "host-b", env=env)
    assert len(api.served) == served  # nothing fetched again on the other host
    assert again.returncode == EXIT_ALREADY_FINISHED, again.stderr
    (line,) = json_lines(again.stdout)
    assert line["status"] == json_lines(first.stdout)[-1]["message"]  # as the first host published it


def test_config_check_names_the_missing_postgresql_store_for_object_storage(tmp_path):
    from swath.core.config import Config
    from swath.site_check import problems

    sqlite = Config(data_root=tmp_path, db_url=f"sqlite:///{tmp_path / 's.sqlite'}")
    assert not [line for line in problems(sqlite) if "SWATH_STORAGE_URL" in line]  # the default: nothing to say
    lines = [line for line in problems(dataclasses.replace(sqlite, storage_url="s3://b/p"))
             if "SWATH_STORAGE_URL" in line]
    assert len(lines) == 1 and "SWATH_DB_URL" in lines[0] and "postgresql://" in lines[0]


def test_the_claims_own_session_is_set_to_notice_a_dead_peer_and_never_hang(pg_url):  # noqa: F811
    from swath.store.pg_claim import SESSION_SETTINGS

    coordination = PgCoordination(config=_config(pg_url))
    claim = coordination.claim(f"settings:{uuid.uuid4().hex[:8]}", instance="test")
    assert claim.try_acquire()
    try:
        conn = claim._conn  # the claim's own connection (not from the store's pool)
        assert conn is not None
        for setting in SESSION_SETTINGS:  # e.g. "SET statement_timeout = '30s'"
            name, _, value = setting.removeprefix("SET ").partition(" = ")
            shown = conn.exec_driver_sql(f"SHOW {name}").scalar_one()
            assert shown == value.strip("'"), (name, shown, value)  # SHOW prints what SET was given
        with coordination.engine.connect() as pooled:  # the store's pool: state commits, never the lock
            other = pooled.exec_driver_sql("SELECT pg_backend_pid()").scalar_one()
        assert conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one() != other
        conn.commit()
    finally:
        claim.release()
        coordination.engine.dispose()
