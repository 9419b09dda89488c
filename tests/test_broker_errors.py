"""A broker (or database) that refuses or is away, as an operator meets it: real `swath` processes against
the real RabbitMQ with a wrong password, a missing vhost, a user without permissions, a port nobody listens on
(and PostgreSQL with a missing role or database). Each is told in one line with a code and what to do, a launch
leaves no queued job, a worker waits with a capped back-off."""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from urllib.parse import quote

import pytest

from swath.core.config import Config
from swath.messages import codes
from swath.requester import Requester
from swath.store import Store, repo
from swath.store.models import ACCEPTED, FAILURE, QUEUED
from tests.requesterkit import cli_env, pg_url  # noqa: F401  (pg_url: a fixture)

WRONG = "wrong-password-for-the-test"


def with_url(config: Config, *, password: str = "guest", user: str = "guest", vhost: str = "/", port: int = 5672,
             host: str = "127.0.0.1") -> Config:
    return dataclasses.replace(config, amqp_url=f"amqp://{user}:{password}@{host}:{port}/{quote(vhost, safe='')}")


def run_swath(config: Config, *args: str, timeout: float = 120) -> tuple[subprocess.CompletedProcess, float]:
    began = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "swath", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **cli_env(config)})
    return done, time.monotonic() - began


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def accepted_source(config: Config, name: str = "pages") -> str:
    store = Store(url=config.db_url)
    try:
        requester = Requester(config=config, store=store)
        source = requester.create_source(name=name, harvest_type="generic_pages",
                                         seeds=[{"id": "s1", "token": "http://127.0.0.1:9/p"}], options={},
                                         credentials=[], collection_set_id="cs", collection_id=None)
        with store.session() as s:
            repo.set_validation(s, repo.find_source(s, name), ACCEPTED, None)
        return source.id
    finally:
        store.close()


def jobs_of(config: Config, source_id: str) -> list[tuple[str, list[str]]]:
    store = Store(url=config.db_url)
    try:
        with store.session() as s:
            return [(job.status, [e["code"] for e in job.errors]) for job in repo.list_jobs(s, source_id=source_id)]
    finally:
        store.close()


def one_error_line(done: subprocess.CompletedProcess, code: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"error [{code}]: "), lines[0]
    assert "Traceback" not in done.stderr and "pika" not in done.stderr
    return lines[0]


@pytest.fixture(scope="module")
def limited_users() -> Iterator[dict[str, str]]:
    """Two RabbitMQ users made for this module: one with no permission on vhost '/', one that may only read."""
    tag = uuid.uuid4().hex[:8]
    users = {"none": f"swath_test_none_{tag}", "read": f"swath_test_read_{tag}"}
    for user in users.values():
        subprocess.run(["rabbitmqctl", "add_user", user, "pw"], check=True, capture_output=True, timeout=120)
    subprocess.run(["rabbitmqctl", "set_permissions", "-p", "/", users["read"], "^$", "^$", ".*"], check=True,
                   capture_output=True, timeout=120)
    try:
        yield users
    finally:
        for user in users.values():
            subprocess.run(["rabbitmqctl", "delete_user", user], capture_output=True, timeout=120)


def test_launch_with_a_wrong_password_says_so_in_one_line_and_leaves_no_queued_job(config: Config, broker) -> None:
    source_id = accepted_source(config)
    done, took = run_swath(with_url(config, password=WRONG), "harvest", "launch", "pages")
    assert done.returncode == 1
    line = one_error_line(done, codes.BROKER_AUTH_REFUSED)
    assert "SWATH_AMQP_URL" in line and "'guest'" in line and WRONG not in done.stderr + done.stdout
    assert took < 60  # was 62 s of retries before it gave up; a refused login is final at once
    assert jobs_of(config, source_id) == [(FAILURE, [codes.BROKER_AUTH_REFUSED])]
    # nothing queued is left to make the source busy: with the right password the next launch gets as far as
    # the broker (no worker is bound here, so it fails with no_worker, not source_busy)
    again, _ = run_swath(config, "harvest", "launch", "pages")
    one_error_line(again, codes.NO_WORKER)


def test_launch_to_a_port_nobody_listens_on_gives_up_in_seconds(config: Config, broker) -> None:
    source_id = accepted_source(config)
    port = free_port()
    done, _took = run_swath(with_url(config, port=port), "harvest", "launch", "pages")
    line = one_error_line(done, codes.BROKER_UNREACHABLE)
    assert f"127.0.0.1:{port}" in line and "connection refused" in line
    assert jobs_of(config, source_id) == [(FAILURE, [codes.BROKER_UNREACHABLE])]


@pytest.mark.parametrize("who, code", [("missing vhost", codes.BROKER_VHOST_MISSING),
                                       ("no permission on the vhost", codes.BROKER_PERMISSION),
                                       ("may not configure", codes.BROKER_PERMISSION),
                                       ("nobody listening", codes.BROKER_UNREACHABLE)])
def test_broker_setup_names_the_refusal(config: Config, broker, limited_users, who: str, code: str) -> None:
    bad = {"missing vhost": lambda: with_url(config, vhost=f"/nope-{uuid.uuid4().hex[:6]}"),
           "no permission on the vhost": lambda: with_url(config, user=limited_users["none"], password="pw"),
           "may not configure": lambda: with_url(config, user=limited_users["read"], password="pw"),
           "nobody listening": lambda: with_url(config, port=free_port())}[who]()
    done, _ = run_swath(bad, "broker", "setup")
    assert done.returncode == 1
    line = one_error_line(done, code)
    assert "is it running" not in line  # what the old message said to a refused login
    assert {codes.BROKER_VHOST_MISSING: "rabbitmqctl add_vhost", codes.BROKER_PERMISSION: "permission",
            codes.BROKER_UNREACHABLE: "is RabbitMQ running"}[code] in line


def test_debug_shows_the_traceback(config: Config, broker) -> None:
    done, _ = run_swath(with_url(config, password=WRONG), "--debug", "broker", "setup")
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ProbableAuthenticationError" in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(f"error [{codes.BROKER_AUTH_REFUSED}]")


def test_a_worker_refused_by_the_broker_waits_with_a_capped_back_off_one_line_per_wait(config: Config,
                                                                                     broker) -> None:
    env = {**os.environ, **cli_env(with_url(config, password=WRONG)), "SWATH_RECONNECT_MAX_DELAY": "1"}
    worker = subprocess.Popen([sys.executable, "-m", "swath", "worker", "generic_harvester"], env=env,
                              stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    waits: list[float] = []
    assert worker.stderr is not None
    timer = threading.Timer(120, worker.kill)  # a hang guard, not a synchronisation
    timer.start()
    try:
        for line in worker.stderr:
            lines.append(line.rstrip("\n"))
            found = re.search(r"waiting for the broker \[(\w+)\].*retrying in ([\d.]+)s", line)
            if found:
                assert found.group(1) == codes.BROKER_AUTH_REFUSED
                waits.append(float(found.group(2)))
            if len(waits) == 4:
                worker.send_signal(signal.SIGTERM)
                break
        _, rest = worker.communicate(timeout=120)
        lines += rest.splitlines() if rest else []
    finally:
        timer.cancel()
    assert worker.returncode == 0, lines
    assert waits == [0.5, 1.0, 1.0, 1.0]  # doubling from 0.5 s, capped at SWATH_RECONNECT_MAX_DELAY
    text = "\n".join(lines)
    assert "Traceback" not in text and "pika." not in text and WRONG not in text
    waiting = [line for line in lines if "waiting for the broker" in line]
    assert all("check the user and password in SWATH_AMQP_URL" in line for line in waiting)
    # besides the waits: at most the publisher's one line, then the shutdown lines
    others = [line for line in lines if line not in waiting]
    assert len(others) <= 3 and any("shutting down: no job running" in line for line in others), others


def test_a_scheduled_launch_waits_in_the_outbox_while_the_broker_is_away_but_not_when_refused(config: Config,
                                                                                         broker) -> None:
    source_id = accepted_source(config)
    for bad, expected in [(with_url(config, port=free_port()), QUEUED),
                          (with_url(config, password=WRONG), FAILURE)]:
        store = Store(url=config.db_url)
        requester = Requester(config=bad, store=store)
        try:
            with store.session() as s:
                source = repo.find_source(s, "pages")
                job = repo.add_job(s, job_id=f"{source_id}-{uuid.uuid4().hex[:6]}", source=source,
                                   routing_key=requester.start_routing_key(source), trigger="schedule")
            results = requester.publish_pending(only=[job.id])
            assert [r.published for r in results] == [False]
            with store.session() as s:
                assert repo.get_job(s, job.id).status == expected
                if expected == QUEUED:  # leave the outbox as the next case expects it
                    repo.fail_job(s, repo.get_job(s, job.id), codes.BAD_REQUEST, "test: cleared")
        finally:
            requester.close()
            store.close()



@pytest.mark.parametrize("case, code", [("no such role", codes.DATABASE_AUTH_REFUSED),
                                        ("no such database", codes.DATABASE_MISSING),
                                        ("nobody listening", codes.DATABASE_UNREACHABLE)])
def test_a_store_that_cannot_open_is_named_in_one_line(config: Config, pg_url: str, case: str, code: str) -> None:
    tag = uuid.uuid4().hex[:8]
    url = {"no such role": f"postgresql+psycopg2://nobody_{tag}:pw@127.0.0.1:5432/postgres",
           "no such database": f"postgresql+psycopg2://postgres@127.0.0.1:5432/missing_{tag}",
           "nobody listening": f"postgresql+psycopg2://postgres:pw@127.0.0.1:{free_port()}/postgres"}[case]
    if code == codes.DATABASE_MISSING:  # the same server, with a database that exists, opens
        good, _ = run_swath(dataclasses.replace(config, db_url=pg_url), "harvest", "sources")
        assert good.returncode == 0, good.stderr
    done, _ = run_swath(dataclasses.replace(config, db_url=url), "harvest", "sources")
    assert done.returncode == 1
    line = one_error_line(done, code)
    assert "SWATH_DB_URL" in line and ":pw@" not in line  # what to do; the password masked


def test_a_publisher_that_may_give_up_fails_its_publishes_instead_of_waiting(config: Config) -> None:
    """The requester's publisher: an unreachable broker fails a publish after give_up_after seconds of retries,
    and later publishes at once while the broker stays away (the scheduler's next tick tries again)."""
    from swath.messages.broker import Publisher
    from swath.messages.broker_errors import BrokerError

    port = free_port()
    with Publisher(config=with_url(config, port=port), give_up_after=1.0) as publisher:
        first = publisher.publish("harvest.start.x.y", {"id": "a"})
        with pytest.raises(BrokerError) as failed:
            first.result(timeout=120)
        assert failed.value.code == codes.BROKER_UNREACHABLE and f":{port}/" in failed.value.message
        later = publisher.publish("harvest.start.x.y", {"id": "b"})
        assert later.done() and later.exception() is not None
        assert later.exception().code == codes.BROKER_UNREACHABLE  # type: ignore[union-attr]
