"""Notification e-mail on the real broker, monitor and a real SMTP server on 127.0.0.1 (aiosmtpd): members who
chose an event on the settings page get one mail per event of their group's collections and exports; an opted-out
member, a member who chose another kind, a disabled member, an admin and a member of another group get none; a
redelivered final status mails nobody again; a mail names the collection and the run and carries no credential;
a failed send is one coded log line and the monitor goes on recording."""

from __future__ import annotations

import dataclasses
import logging

import pytest
from sqlalchemy import update
from starlette.testclient import TestClient

from swath.commands.config import effective
from swath.core.config import Config
from swath.messages import codes
from swath.messages.worker import wait_for
from swath.monitor import monitor_worker
from swath.store import Store, repo, web_repo
from swath.store.models import FAILURE, RUNNING, SUCCESS, Source, utcnow
from swath.store.notify_models import EVENT_KINDS, EXPORT_READY
from swath.store.web_models import User
from tests.requesterkit import running
from tests.smtpkit import free_port, smtp_server
from tests.test_store import status_body
from tests.webkit import client, login, post, user, web_config

PAGES_KEY, STREAM_KEY = "harvest.status.generic.generic_pages", "harvest.status.generic.generic_stream"
EXPORT_KEY = "export.status.tumblr.tumblr_blog_posts"
LEAK = "https://archivist:hunter2-secret@api.example.org/feed?access_token=tok-98765"
SMTP_USER, SMTP_PASSWORD = "mailer", "smtp-pass-4321"
# who chose what on the settings page: ada everything, bob an address but no event, carl exports only, dan
# everything but an admin disabled him afterwards (all in the group `lib`); eve everything, in the group `other`
CHOICES = {"ada": ("lib", EVENT_KINDS), "bob": ("lib", ()), "carl": ("lib", (EXPORT_READY,)),
           "dan": ("lib", EVENT_KINDS), "eve": ("other", EVENT_KINDS)}
WEB_URL = "https://archive.example.org/swath"  # SWATH_WEB_URL behind a proxy, under a prefix


def address(name: str) -> str:
    return f"{name}@example.org"


def choose(c: TestClient, name: str, kinds: tuple[str, ...]) -> None:
    login(c, name)
    response = post(c, "/account/notifications", {"email": address(name), **{k: "on" for k in kinds}},
                    page="/account/notifications")
    assert response.status_code == 303
    page = c.get(response.headers["location"]).text
    assert "saved" in page and address(name) in page
    assert [k for k in EVENT_KINDS if f'name="{k}" type="checkbox" checked' in page] == list(kinds)


def collection(store: Store, *, group: str, name: str, harvest_type: str, jobs: tuple[str, ...]) -> Source:
    with store.session() as s:
        owner = web_repo.group_named(s, group, create=True)
        cs = web_repo.add_set(s, set_id=f"set-{group}-{harvest_type}", name=f"Set of {group}", description=None,
                              group=owner)
        source = Source(id=repo.new_id(), name=name, harvest_type=harvest_type, platform="generic", seeds=[],
                        options={}, credentials={}, collection_set_id=cs.id, collection_id=f"col-{name}")
        s.add(source)
        s.flush()
        for job_id in jobs:
            repo.add_job(s, job_id=job_id, source=source, routing_key=f"harvest.start.generic.{harvest_type}",
                         trigger="manual")
        s.expunge(source)
        return source


@pytest.fixture
def site(config: Config) -> tuple[Config, Store, dict[str, Source]]:
    config = web_config(config)
    store = Store(url=config.db_url)
    for name, (group, _kinds) in CHOICES.items():
        user(store, name, groups=(group,))
    user(store, "root", admin=True)  # an admin of no group: not mailed about the groups' work
    sources = {
        "pages": collection(store, group="lib", name="Städtische Blogs", harvest_type="generic_pages",
                            jobs=("h-fail", "h-ok")),
        "stream": collection(store, group="lib", name="Live feed", harvest_type="generic_stream", jobs=("h-stream",)),
        "other": collection(store, group="other", name="Other group's feeds", harvest_type="generic_pages",
                            jobs=("h-other",)),
    }
    with store.session() as s:
        repo.add_export(s, export_id="e1", export_type="tumblr_blog_posts", fmt="csv", path="exports/e1",
                        collection_id=sources["pages"].collection_id)
        web_repo.add_export_request(s, export_id="e1", set_id=sources["pages"].collection_set_id,
                                    source_id=sources["pages"].id, user="carl")
    for name, (_group, kinds) in CHOICES.items():
        choose(client(config, store), name, kinds)
    with store.session() as s:
        s.execute(update(User).where(User.name == "dan").values(disabled_at=utcnow()))
    yield config, store, sources
    store.close()


def failure(job_id: str) -> dict:
    return status_body(job_id, FAILURE, 3, errors=[
        {"code": codes.UNAUTHORIZED, "message": f"401 from {LEAK}", "seed_id": "seed-1"}])


def test_members_who_chose_an_event_are_mailed_once_and_no_one_else(site, broker) -> None:
    config, store, sources = site
    export_done = {"id": "e1", "status": SUCCESS, "date_started": "2024-01-02T00:00:00+00:00",
                   "date_ended": "2024-01-02T00:05:00+00:00", "infos": [], "warnings": [], "errors": [],
                   "service": "Tumblr Exporter", "host": "h", "instance": "7"}
    messages = [(PAGES_KEY, status_body("h-fail", RUNNING, 1)), (PAGES_KEY, failure("h-fail")),
                (PAGES_KEY, failure("h-fail")),  # redelivered: recorded already, mails nobody again
                (PAGES_KEY, status_body("h-ok", SUCCESS, 5)),  # a success of a harvest that is no stream: no mail
                (STREAM_KEY, status_body("h-stream", SUCCESS, 8)), (EXPORT_KEY, export_done),
                (PAGES_KEY, failure("h-other"))]
    with smtp_server(user=SMTP_USER, password=SMTP_PASSWORD) as (inbox, port):
        config = dataclasses.replace(config, smtp_url=f"smtp://{SMTP_USER}:{SMTP_PASSWORD}@127.0.0.1:{port}",
                                     mail_from="swath@library.example", web_url=WEB_URL)
        with running(monitor_worker(config=config, store=store)) as worker:
            for routing_key, body in messages:
                broker.publish(routing_key, body)
            assert wait_for(lambda: worker.processed >= len(messages), 120), f"processed {worker.processed}"
        assert inbox.login == (SMTP_USER, SMTP_PASSWORD)  # the URL's user and password logged in
        received = {name: [m["Subject"] for m in inbox.to(address(name))] for name in (*CHOICES, "root")}

    lib, other = sources["pages"], sources["other"]
    assert received == {
        "ada": [f"swath: harvest of {lib.name} failed", f"swath: stream harvest of {sources['stream'].name} stopped",
                f"swath: export of {lib.name} is ready"],
        "bob": [],  # chose no event
        "carl": [f"swath: export of {lib.name} is ready"],  # chose exports only
        "dan": [],  # disabled
        "eve": [f"swath: harvest of {other.name} failed"],  # her group's failure only, never lib's
        "root": [],
    }
    [failed, _stream, ready] = inbox.to(address("ada"))
    text = failed.get_content()
    assert failed["From"] == "swath@library.example"
    assert f'"{lib.name}" (collection set "Set of lib")' in text and "Run: h-fail" in text
    # links at SWATH_WEB_URL, the public address with its path prefix
    assert f"{WEB_URL}/runs/h-fail" in text and f"{WEB_URL}/collections/{lib.id}" in text and "What to do:" in text
    assert f"{WEB_URL}/account/notifications" in text
    assert f"[{codes.UNAUTHORIZED}] (seed seed-1)" in text and "3 posts" in text
    for secret in ("hunter2-secret", "tok-98765", SMTP_PASSWORD):
        assert all(secret not in m.as_string() for _rcpt, m in inbox.mails)
    assert "Export: e1" in ready.get_content() and f"{WEB_URL}/exports/e1" in ready.get_content()
    with store.session() as s:
        assert repo.get_job(s, "h-fail").status == FAILURE


def test_a_failed_send_is_a_coded_log_line_and_the_monitor_goes_on(site, broker, caplog) -> None:
    config, store, _sources = site
    port = free_port()
    config = dataclasses.replace(config, smtp_url=f"smtp://{SMTP_USER}:{SMTP_PASSWORD}@127.0.0.1:{port}")
    with caplog.at_level(logging.WARNING, logger="swath.notify"):
        with running(monitor_worker(config=config, store=store)) as worker:
            broker.publish(PAGES_KEY, failure("h-fail"))  # ada would be mailed: nothing listens on that port
            broker.publish(PAGES_KEY, status_body("h-ok", SUCCESS, 2))
            assert wait_for(lambda: worker.processed >= 2, 120), f"processed {worker.processed}"
    with store.session() as s:
        assert [repo.get_job(s, j).status for j in ("h-fail", "h-ok")] == [FAILURE, SUCCESS]
    lines = [r.getMessage() for r in caplog.records if r.name == "swath.notify"]
    assert len(lines) == 1 and lines[0].startswith(f"[{codes.MAIL_FAILED}]")
    # the server named, its password never; the user part is masked (or dropped, once a test in this process
    # installed the CLI's log filter, which takes userinfo out of every URL in a log line)
    assert f"127.0.0.1:{port}" in lines[0] and SMTP_PASSWORD not in lines[0]
    assert broker.depth(config.dead_letter_queue) == 0  # nothing refused for want of a mail


def test_the_settings_page_refuses_what_is_not_one_address_and_keeps_it(site) -> None:
    config, store, _sources = site
    c = client(config, store)
    login(c, "bob")
    typed = "bob@example.org, eve@example.org"  # a list would mail someone else
    response = post(c, "/account/notifications", {"email": typed, EXPORT_READY: "on"}, page="/account/notifications")
    assert response.status_code == 400 and codes.EMAIL_INVALID in response.text
    assert f'value="{typed}"' in response.text  # what was typed stays in the form
    assert 'name="export_ready" type="checkbox" checked' in response.text
    assert 'value="bob@example.org"' in c.get("/account/notifications").text  # the saved address unchanged


def test_smtp_settings_are_checked_and_shown_masked() -> None:
    env = {"SWATH_SMTP_URL": f"smtps://{SMTP_USER}:{SMTP_PASSWORD}@mail.example.org:465",
           "SWATH_MAIL_FROM": "swath@example.org"}
    shown = effective(Config.from_env(env))
    assert shown["smtp_url"] == f"smtps://{SMTP_USER}:***@mail.example.org:465"
    assert shown["mail_from"] == "swath@example.org"
    assert SMTP_PASSWORD not in repr(Config.from_env(env))
    with pytest.raises(SystemExit, match="SWATH_SMTP_URL must be smtp://") as caught:
        Config.from_env({"SWATH_SMTP_URL": f"http://{SMTP_USER}:{SMTP_PASSWORD}@mail.example.org"})
    assert SMTP_PASSWORD not in str(caught.value)


def outward_address() -> str | None:
    """This machine's address on its network (no packet is sent), or None when it has only loopback."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect(("192.0.2.1", 9))
        except OSError:
            return None
        found = sock.getsockname()[0]
    return None if found.startswith("127.") else str(found)


def test_the_smtp_password_never_crosses_the_network_unencrypted(caplog) -> None:
    from swath.notify import Mail, Mailer

    host = outward_address()
    if host is None:
        pytest.skip("this machine has no non-loopback address to serve SMTP on")
    with smtp_server(user=SMTP_USER, password=SMTP_PASSWORD, hostname=host) as (inbox, port):
        url = f"smtp://{SMTP_USER}:{SMTP_PASSWORD}@{host}:{port}"  # no STARTTLS offered, not on loopback
        with caplog.at_level(logging.WARNING, logger="swath.notify"):
            sent = Mailer(dataclasses.replace(Config(), smtp_url=url)).send([Mail(to="a@example.org", subject="s",
                                                                                  body="b")])
        assert sent == 0 and inbox.login is None and inbox.mails == []
    [line] = [r.getMessage() for r in caplog.records if r.name == "swath.notify"]
    assert line.startswith(f"[{codes.MAIL_FAILED}]") and "offers no STARTTLS" in line and SMTP_PASSWORD not in line
