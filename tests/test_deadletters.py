"""`swath broker dead-letters list|show|requeue|purge` on the real broker: messages a real worker refused are
listed with their reason (credentials masked), stay put when looked at, go back to their original routing key
only once the broker confirmed the copy, and are purged by id or all at once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest

from swath.core.config import Config
from swath.messages import codes
from swath.messages.worker import wait_for
from tests.brokerprobe import running_worker
from tests.dummyjob import dummy_spec
from tests.requesterkit import cli_env

SECRET = "dead-letter-secret-4711"
START_KEY = "harvest.start.dummy.dummy"


def swath(config: Config, *args: str, expect: int = 0) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "swath", "broker", "dead-letters", *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **cli_env(config)})
    assert done.returncode == expect, done.stderr
    return done


def as_json(done: subprocess.CompletedProcess) -> Any:
    return json.loads(done.stdout)


@pytest.fixture
def refused(config: Config, broker) -> dict[str, dict]:
    """Three messages a real dummy worker refused: schema-invalid (with a credential), an unknown type, not JSON.
    Returns their bodies by reason code, in the order they were refused."""
    bodies: dict[str, Any] = {
        codes.SCHEMA_INVALID: {"id": "h-schema", "type": "dummy", "credentials": {"api_key": SECRET},
                               "seeds": [{"id": "s1", "token": f"x-{SECRET}-y"}]},  # no path: invalid
        codes.UNKNOWN_TYPE: {"id": "h-type", "type": "nonesuch", "path": "c1"},
        codes.NOT_JSON: b"\xff not json",
    }
    with running_worker(config, dummy_spec()):
        for body in bodies.values():
            broker.publish(START_KEY, body)
        assert wait_for(lambda: broker.depth(config.dead_letter_queue) == len(bodies), 120)
    broker.channel.queue_delete(config.queue_prefix + "dummy_harvester")  # nothing routes START_KEY until a test binds
    return bodies


def test_list_and_show_mask_credentials_and_leave_the_messages_in_place(config: Config, broker, refused) -> None:
    listed = as_json(swath(config, "list", "--json"))
    assert listed["total"] == len(refused) and listed["queue"] == config.dead_letter_queue
    rows = listed["dead_letters"]
    assert [r["code"] for r in rows] == list(refused)  # oldest first, with the worker's reason
    assert {r["routing_key"] for r in rows} == {START_KEY}
    assert [r["message_id"] for r in rows] == ["h-schema", "h-type", None]
    assert broker.depth(config.dead_letter_queue) == len(refused)  # looking removed nothing

    human = swath(config, "list").stdout
    assert all(r["id"] in human for r in rows) and codes.UNKNOWN_TYPE in human

    schema_id = rows[0]["id"]
    shown = as_json(swath(config, "show", schema_id, "--json"))
    assert shown["body"]["credentials"] == {"api_key": "***"}
    assert shown["body"]["seeds"][0]["token"] == "x-***-y"  # the value is masked wherever it appears
    assert shown["headers"]["x-swath-original-queue"] == config.queue_prefix + "dummy_harvester"
    text = swath(config, "show", schema_id).stdout
    assert "'path' is a required property" in text
    not_json = as_json(swath(config, "show", rows[2]["id"], "--json"))
    assert not_json["body"] is None and not_json["bytes"] == len(refused[codes.NOT_JSON])
    for out in (json.dumps(listed), human, json.dumps(shown), text):
        assert SECRET not in out
    assert broker.depth(config.dead_letter_queue) == len(refused)

    missing = swath(config, "show", "no-such-id", expect=1)
    assert missing.stderr.startswith(f"error [{codes.DEAD_LETTER_NOT_FOUND}]")


def test_requeue_sends_it_to_its_original_routing_key_and_only_then_removes_it(config: Config, broker,
                                                                            refused) -> None:
    rows = as_json(swath(config, "list", "--json"))["dead_letters"]
    type_row = rows[1]
    # nothing is bound for the original key now (the worker is gone): the broker returns the copy, so it stays
    gone = swath(config, "requeue", type_row["id"], "--json", expect=1)
    assert "no queue is bound" in as_json(gone)["failed"][type_row["id"]]
    assert broker.depth(config.dead_letter_queue) == len(refused)

    starts = broker.queue(config.queue_prefix + "starts", [START_KEY])
    done = as_json(swath(config, "requeue", type_row["id"], "--json"))
    assert done == {"requeued": [type_row["id"]], "failed": {}}
    method, headers, body = broker.get(starts)
    assert method.routing_key == START_KEY and body == refused[codes.UNKNOWN_TYPE]
    assert not any(k.startswith("x-swath-") for k in headers)  # the reason headers stay with the dead letter
    left = as_json(swath(config, "list", "--json"))["dead_letters"]
    assert [r["id"] for r in left] == [rows[0]["id"], rows[2]["id"]]


def test_purge_by_id_then_all(config: Config, broker, refused) -> None:
    rows = as_json(swath(config, "list", "--json"))["dead_letters"]
    out = as_json(swath(config, "purge", rows[0]["id"], "--json"))
    assert out == {"purged": 1, "not_found": []}
    assert [r["id"] for r in as_json(swath(config, "list", "--json"))["dead_letters"]] == [rows[1]["id"],
                                                                                          rows[2]["id"]]
    refusal = swath(config, "purge", expect=1)  # neither ids nor --all
    assert refusal.stderr.startswith(f"error [{codes.BAD_REQUEST}]")
    assert as_json(swath(config, "purge", "--all", "--yes", "--json")) == {"purged": 2, "not_found": []}
    assert broker.depth(config.dead_letter_queue) == 0
    assert "no dead letters" in swath(config, "list").stdout


def test_list_and_show_print_control_characters_of_a_message_escaped(config: Config, broker) -> None:
    # a message's id and type are printed on an operator's terminal: ESC, CR or a line break must not act there
    hostile = {"id": "h-\x1b]0;owned\x07\r\nforged line", "type": "dummy\x1b[2J"}  # no path: refused
    with running_worker(config, dummy_spec()):
        broker.publish(START_KEY, hostile)
        assert wait_for(lambda: broker.depth(config.dead_letter_queue) == 1, 120)
    broker.channel.queue_delete(config.queue_prefix + "dummy_harvester")
    listed = swath(config, "list").stdout
    ident = as_json(swath(config, "list", "--json"))["dead_letters"][0]["id"]
    shown = swath(config, "show", ident).stdout
    for text in (listed, shown):
        assert not any(c in text for c in "\x1b\x07\r"), repr(text)
        assert "\nforged line" not in text
    assert len(listed.splitlines()) == 1
    assert "h-\\x1b]0;owned\\x07\\x0d" in listed
