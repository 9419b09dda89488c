"""The web application under load from outside (issue 30, items 3-5), on `swath web` in a real uvicorn
subprocess whose memory is read from /proc: oversized bodies are refused before they are read, a post
without a session is answered unread, argon2 hashing is bounded, and concurrent wrong passwords are all
counted by the login throttle."""

from __future__ import annotations

import threading
from collections.abc import Callable

import httpx

from swath.core.config import Config
from swath.messages import codes
from swath.store import Store
from swath.web import auth
from tests.requesterkit import db_url, pg_url  # noqa: F401
from tests.webkit import PASSWORD, user, web_config
from tests.webprocess import MIB, WebProcess, form_fields, send_raw, web_process

HUGE_FIELDS, FIELD = 80, MIB - 1024  # an 80 MiB form: 80 fields just under the parser's 1 MiB per field


def at_once(count: int, call: Callable[[int], httpx.Response]) -> list[httpx.Response]:
    """`call(n)` for n in range(count), from `count` threads released together."""
    start = threading.Barrier(count)
    answers: list[httpx.Response | None] = [None] * count

    def run(n: int) -> None:
        start.wait()
        answers[n] = call(n)

    threads = [threading.Thread(target=run, args=(n,), name=f"test-client-{n}") for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(600)
    assert all(a is not None for a in answers), "a request got no answer"
    return [a for a in answers if a is not None]


def test_a_huge_post_without_a_session_is_refused_unread(config: Config) -> None:
    """Issue 30 item 3: 479 MiB posted to /logout took the process from 145 to 572 MiB (the form was read
    whole before the session was checked). Declared (Content-Length) or chunked, it is now refused unread."""
    config = web_config(config)
    chunks = list(form_fields(HUGE_FIELDS, FIELD))
    with web_process(config) as web:
        web.login_token()  # the login page rendered once: templates loaded before the peak is taken
        before = web.baseline()
        declared = send_raw(web, "/logout", iter(chunks), length=sum(map(len, chunks)))
        chunked = send_raw(web, "/logout", iter(chunks))
        grown = web.memory() - before
        print(f"RSS before {before / MIB:.0f} MiB, after two {len(chunks)} MiB posts: peak +{grown / MIB:.0f} MiB")
    assert grown < 50 * MIB, f"the process grew by {grown / MIB:.0f} MiB"
    assert declared == 413  # over the logout form's cap, said up front: refused before reading
    assert chunked == 403  # no session: answered before the form is read


def test_bodies_over_their_route_cap_get_413(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    user(store, "ada", groups=("lib",))
    small, form = 4096, 64 * 1024
    with web_process(config, SWATH_WEB_LOGIN_MAX_BYTES=str(small), SWATH_WEB_FORM_MAX_BYTES=str(form)) as web:
        assert web.login("ada", PASSWORD, web.login_token()).status_code == 303  # a normal login fits
        # a chunked login form passing the cap is cut as it arrives (it has no Content-Length to refuse)
        assert send_raw(web, "/login", form_fields(4, small // 2)) == 413
        client = httpx.Client(base_url=web.url, timeout=120)
        token = web.login_token()
        client.cookies.set("swath_login_csrf", token)
        assert client.post("/login", data={"csrf": token, "name": "ada", "password": PASSWORD}).status_code == 303
        session = f"{auth.COOKIE}={client.cookies[auth.COOKIE]}"
        fields = list(form_fields(2, form // 2))
        over = send_raw(web, "/sets", iter(fields), length=sum(map(len, fields)), cookie=session)
        refused = client.post("/sets", data={"csrf": "x", "name": "y" * form})
        under = client.post("/sets", data={"csrf": "x", "name": "y" * (form // 2)})
    store.close()
    assert over == 413
    assert refused.status_code == 413 and codes.WEB_TOO_LARGE in refused.text
    assert under.status_code == 403 and codes.WEB_CSRF in under.text  # read, then judged on its CSRF token


def test_thirty_concurrent_logins_hash_a_bounded_number_at_once(config: Config) -> None:
    """Issue 30 item 4: thirty logins at once took 850 MiB (64 MiB of argon2 each, all at once)."""
    config = web_config(config)
    store = Store(url=config.db_url)
    for n in range(30):
        user(store, f"user{n}")
    store.close()
    with web_process(config) as web:
        token = web.login_token()
        before = web.baseline()
        answers = at_once(30, lambda n: web.login(f"user{n}", PASSWORD, token))
        grown = web.memory() - before
    statuses = sorted(a.status_code for a in answers)
    print(f"RSS before {before / MIB:.0f} MiB, 30 logins: peak +{grown / MIB:.0f} MiB; answers {statuses}")
    assert set(statuses) <= {303, 429} and 303 in statuses  # logged in, or told to come back (web_busy)
    assert all("try again in a moment" in a.text for a in answers if a.status_code == 429)  # busy, not throttled
    assert grown < 300 * MIB, f"the process grew by {grown / MIB:.0f} MiB"


def checked(web: WebProcess, names: list[str]) -> list[int]:
    """Wrong passwords for `names`, all at once; the answers' statuses (401: the password was checked)."""
    token = web.login_token()
    return [a.status_code for a in at_once(len(names), lambda n: web.login(names[n], "wrong password!", token))]


def test_concurrent_wrong_passwords_for_one_name_check_at_most_the_limit(config: Config, db_url: str) -> None:
    """Issue 30 item 5: 20 wrong passwords at once for one name had 17-20 of them checked (limit 5). On SQLite
    and PostgreSQL (read committed: the count's own transaction sees every attempt committed before it)."""
    config = web_config(config, db_url)
    store = Store(url=config.db_url)
    user(store, "ada")
    store.close()
    with web_process(config) as web:
        statuses = checked(web, ["ada"] * 20)
        after = web.login("ada", PASSWORD, web.login_token())
    assert statuses.count(401) == auth.MAX_FAILURES, statuses
    assert set(statuses) <= {401, 429}
    assert after.status_code == 429 and "too many failed logins" in after.text  # even the right password waits


def test_concurrent_wrong_passwords_from_one_address_check_at_most_the_limit(config: Config, db_url: str) -> None:
    config = web_config(config, db_url)
    with web_process(config) as web:
        statuses = checked(web, [f"name{n}" for n in range(20)])
    assert statuses.count(401) == auth.MAX_FAILURES, statuses
    assert set(statuses) <= {401, 429}


def test_hashing_slots_follow_cores_and_memory_and_the_environment() -> None:
    gib = 1024 ** 3
    assert auth.hash_slots(cores=64, memory=512 * gib) == auth.MAX_AUTO_SLOTS  # a big machine: still bounded
    assert auth.hash_slots(cores=64, memory=2 * gib) == 2  # one per GiB
    assert auth.hash_slots(cores=1, memory=64 * gib) == 1  # one per core
    assert auth.hash_slots(cores=8, memory=gib // 2) == 1  # at least one
    config = Config.from_env({"SWATH_WEB_HASH_SLOTS": "6", "SWATH_WEB_FORM_MAX_BYTES": "100000",
                              "SWATH_WEB_PREVIEW_SECONDS": "5"})
    assert (config.web_hash_slots, config.web_form_max_bytes, config.web_preview_seconds) == (6, 100000, 5.0)
    assert Config.from_env({}).web_hash_slots == 0  # auto
