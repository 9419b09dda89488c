"""One masking for every view (core/masking.py): `swath config`, `swath broker dead-letters show` and the dashboard's
/api/status show URLs without their password and secret-named query parameters (issue 30, items 8, 9, 10)."""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import logging
import urllib.error
import urllib.request

import orjson
import pytest

from swath.core.config import Config
from swath.core.masking import MASK, mask_text, mask_url, masked
from swath.dashboard.server import Dashboard
from swath.harvesters.redaction import LOG_FILTER
from swath.messages import codes
from swath.messages.worker import wait_for
from swath.store import Store
from tests.brokerprobe import running_worker
from tests.dummyjob import dummy_spec
from tests.requesterkit import swath
from tests.test_deadletters import START_KEY
from tests.test_deadletters import swath as dead_letters

PASSWORD = "url-pass-9313"  # noqa: S105 - a planted secret the views must not show
QUERY_SECRET = "query-secret-2718"  # noqa: S105


@pytest.mark.parametrize(("url", "shown"), [
    (f"postgresql://u:{PASSWORD}@db/swath?password={QUERY_SECRET}&sslmode=require",
     f"postgresql://u:{MASK}@db/swath?password={MASK}&sslmode=require"),
    (f"http://user:{PASSWORD}@host/oai?verb=ListRecords", f"http://user:{MASK}@host/oai?verb=ListRecords"),
    (f"https://{PASSWORD}@host/x?api_key={QUERY_SECRET}&page=2", f"https://{MASK}@host/x?api_key={MASK}&page=2"),
    (f"amqp://a:{PASSWORD}@h1/,amqp://b:{PASSWORD}@h2/", f"amqp://a:{MASK}@h1/,amqp://b:{MASK}@h2/"),
    ("sqlite:////var/lib/swath/swath.db", "sqlite:////var/lib/swath/swath.db"),  # nothing to mask: unchanged
])
def test_a_url_loses_its_password_and_secret_parameters(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    assert mask_text(f"could not reach {url} (refused)") == f"could not reach {shown} (refused)"


def test_a_structure_loses_credentials_known_secrets_and_url_passwords() -> None:
    body = {"credentials": {"api_key": "k-1"}, "seeds": [{"id": "s1", "token": f"http://u:{PASSWORD}@h/oai"}],
            "options": {"db_password": "p", "note": "k-1 was used"}}
    assert masked(body, ["k-1"]) == {"credentials": {"api_key": MASK},
                                     "seeds": [{"id": "s1", "token": f"http://u:{MASK}@h/oai"}],
                                     "options": {"db_password": MASK, "note": f"{MASK} was used"}}


def test_config_masks_the_db_url_query_and_api_url_passwords(config: Config) -> None:
    """Item 9: `swath config` printed SWATH_DB_URL's ?password= and a user:SECRET@ of an API URL in clear."""
    env = {"SWATH_DB_URL": f"{config.db_url}?password={QUERY_SECRET}",
           "SWATH_MASTODON_API_URL": f"https://bot:{PASSWORD}@mastodon.example"}
    shown = swath(config, "config", "--json", env=env)
    text = swath(config, "config", env=env).output
    for out in (json.dumps(shown), text):
        assert PASSWORD not in out and QUERY_SECRET not in out
    assert shown["db_url"] == f"{config.db_url}?password={MASK}"
    assert shown["api_urls"]["mastodon"] == f"https://bot:{MASK}@mastodon.example"


def test_dead_letter_show_masks_a_seed_urls_password(config: Config, broker) -> None:
    """Item 10: `dead-letters show` masked the credentials but printed a seed URL's user:password@."""
    body = {"id": "h-url", "type": "dummy", "seeds": [{"id": "s1", "token": f"http://user:{PASSWORD}@host/oai"}]}
    with running_worker(config, dummy_spec()):
        broker.publish(START_KEY, body)  # no path: refused as schema-invalid and dead-lettered
        assert wait_for(lambda: broker.depth(config.dead_letter_queue) == 1, 120)
    broker.channel.queue_delete(config.queue_prefix + "dummy_harvester")
    (row,) = json.loads(dead_letters(config, "list", "--json").stdout)["dead_letters"]
    shown = json.loads(dead_letters(config, "show", row["id"], "--json").stdout)
    text = dead_letters(config, "show", row["id"]).stdout
    assert shown["body"]["seeds"][0]["token"] == f"http://user:{MASK}@host/oai"
    assert PASSWORD not in json.dumps(shown) and PASSWORD not in text


def test_dashboard_api_status_masks_seed_url_passwords(config: Config, broker) -> None:
    """Item 8: /api/status (open as the page is) printed seed tokens with their URL passwords."""
    seed = f"http://user:{PASSWORD}@host/oai?token={QUERY_SECRET}"
    swath(config, "harvest", "create", "oai-src", "--type", "oai_pmh", "--seed", seed, "--json")
    store = Store(url=config.db_url)
    dashboard = Dashboard(config=config, store=store, port=0).start()
    try:
        raw = urllib.request.urlopen(dashboard.url + "api/status", timeout=60).read().decode()
    finally:
        dashboard.close()
        store.close()
    assert PASSWORD not in raw and QUERY_SECRET not in raw
    (source,) = orjson.loads(raw)["sources"]
    assert source["seeds"][0]["token"] == f"http://user:{MASK}@host/oai?token={MASK}"
    once = swath(config, "dashboard", "--once", "--json")
    assert PASSWORD not in json.dumps(once)


def test_log_lines_show_urls_masked() -> None:
    """Logs: every swath process puts LOG_FILTER on its handlers (swath/cli.py); a URL logged by anyone is masked."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(LOG_FILTER)
    logger = logging.getLogger("swath.test.masking")
    logger.addHandler(handler)
    try:
        logger.warning("retrying %s", f"https://host/x?token={QUERY_SECRET}&db_password={PASSWORD}")
    finally:
        logger.removeHandler(handler)
    assert out.getvalue() == f"retrying https://host/x?token={MASK}&db_password={MASK}\n"


def test_dashboard_with_a_token_opens_to_bearer_or_basic_only(config: Config, broker) -> None:
    """Issue 30 item 8: /api/status needs the dashboard's token once one is set; /healthz stays open."""
    token = "dash-" + PASSWORD
    store = Store(url=config.db_url)
    dashboard = Dashboard(config=dataclasses.replace(config, dashboard_token=token), store=store, port=0).start()

    def status(path: str, authorization: str | None) -> int:
        request = urllib.request.Request(dashboard.url + path, headers={"Authorization": authorization} if
                                         authorization else {})
        try:
            return urllib.request.urlopen(request, timeout=60).status
        except urllib.error.HTTPError as exc:
            return exc.code

    basic = base64.b64encode(f"anyone:{token}".encode()).decode()
    try:
        assert status("api/status", None) == 401 and status("", None) == 401
        assert status("api/status", "Bearer wrong") == 401 and status("api/status", f"Basic {basic}x") == 401
        assert status("api/status", f"Bearer {token}") == 200 and status("", f"Basic {basic}") == 200
        assert status("healthz", None) == 200
    finally:
        dashboard.close()
        store.close()
    assert token not in json.dumps(swath(config, "config", "--json"))  # shown as set, never the value


def test_dashboard_beyond_this_machine_needs_a_token(config: Config) -> None:
    """Listening on every address with no token would show every group's work to whoever reaches it."""
    refused = swath(config, "dashboard", "--host", "0.0.0.0", "--port", "0", expect=1)
    assert f"[{codes.DASHBOARD_TOKEN_MISSING}]" in refused.output and "SWATH_DASHBOARD_TOKEN" in refused.output


def test_a_refused_api_url_is_named_without_its_password() -> None:
    """A mistyped SWATH_<PLATFORM>_API_URL stops start-up with one line; the line shows the URL masked."""
    with pytest.raises(SystemExit) as refused:
        Config.from_env({"SWATH_MASTODON_API_URL": f"ftp://user:{PASSWORD}@mastodon.example/"})
    assert PASSWORD not in str(refused.value) and f"user:{MASK}@mastodon.example" in str(refused.value)
