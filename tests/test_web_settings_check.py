"""Bad settings are refused when saved, not when a harvest runs, by the one validator the CLI, the web and every
harvest.start share (messages/settings.py): option formats (OAI-PMH `from` is a date or date-time), seed URLs
with a port that exists, duplicate seeds, a query longer than the platform takes. In Chromium the refusal
stands beside its field and what was typed stays in the form."""

from __future__ import annotations

from swath.core.config import Config
from swath.messages import settings
from swath.store import Store, repo
from tests.browserkit import chromium, logged_in, site  # noqa: F401
from tests.requesterkit import swath
from tests.test_web import make_set
from tests.test_web_e2e import new_collection
from tests.webkit import member, post, web_config

BAD_PORT = "http://oai.example.org:99999/oai"


def test_an_oai_from_that_is_no_date_is_refused_beside_its_field_keeping_what_was_typed(
        config: Config, chromium) -> None:  # noqa: F811
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Repositories")
    with site(config, store) as base, logged_in(chromium, base, "ada") as page:
        new_collection(page, f"{base}/sets/{set_id}", "oai_pmh", "Theses", f"{BAD_PORT}\n{BAD_PORT}",
                       **{"opt-from": "last tuesday", "opt-set": "theses"})
        # labels as people say them, from the schema's titles or its keys in words (issue #32 item 12)
        assert page.get_by_label("Metadata prefix").get_attribute("id") == "opt-metadataPrefix"
        assert page.get_by_label("Dry run").get_attribute("id") == "opt-dryrun"
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_selector("#opte-from")
        assert "'last tuesday' is not a date" in page.locator("#opte-from").inner_text()
        assert page.locator("#opt-from").get_attribute("aria-invalid") == "true"
        assert page.locator("#opt-from").input_value() == "last tuesday"  # kept, with the rest typed
        assert page.locator("#opt-set").input_value() == "theses"
        assert page.locator("#name").input_value() == "Theses"
        seeds = page.locator("#seeds-error").inner_text()
        assert "given twice" in seeds and "port" in seeds
        with store.session() as s:
            assert repo.list_sources(s) == []
        page.locator("#opt-from").fill("2024-01-02")
        page.locator("#seeds").fill("https://oai.example.org:8443/oai")
        page.get_by_role("button", name="Create collection").click()
        page.wait_for_url("**/collections/*")
    with store.session() as s:
        (src,) = repo.list_sources(s)
        assert src.options["from"] == "2024-01-02"
    store.close()


def test_the_same_checks_refuse_on_the_command_line_and_in_a_harvest_start(config: Config) -> None:
    out = swath(config, "harvest", "create", "t", "--type", "oai_pmh", "--seed", "https://oai.example.org/oai",
                "--option", "from=last tuesday", "--json", expect=1)
    assert out["error"]["code"] == "bad_request" and "options.from" in out["error"]["message"]
    query = "x" * 600
    found = settings.check_start({"type": "twitter_search_2", "seeds": [{"id": "a", "token": query}],
                                  "options": {}, "credentials": {"bearer_token": "t"}})
    assert found == ["seeds[0].token: 600 characters; twitter_search_2 takes at most 512"]
    assert settings.check_start({"type": "oai_pmh", "seeds": [{"id": "a", "token": BAD_PORT}],
                                 "options": {"from": "2024-01-02T10:00:00Z"}, "credentials": {}}) == [
        f"seeds[0].token: {BAD_PORT!r} has a port that is not one (a number from 1 to 65535)"]


def test_a_web_refusal_of_a_long_query_names_the_seeds_field(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    c = member(config, store)
    set_id = make_set(c, "Tweets")
    response = post(c, f"/sets/{set_id}/new", {"type": "twitter_search_2", "name": "q", "seeds": "x" * 600,
                                               "cred.bearer_token": "t"}, page=f"/sets/{set_id}")
    assert response.status_code == 400 and 'id="seeds-error"' in response.text
    assert "takes at most 512" in response.text
    store.close()
