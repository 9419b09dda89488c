"""`--group NAME` on `swath harvest create` and `swath export start`: what the command line makes for a group is
in that group's web lists (and history, by "command line") and in no other group's; a group that does not exist,
another group's collection set and another group's collection are refused before anything is kept or sent."""

from __future__ import annotations

from sqlalchemy import func, select

from swath.core.config import Config
from swath.store import Store
from swath.store.models import Export, Source
from swath.store.web_models import CollectionSet
from tests.requesterkit import swath
from tests.webkit import member, web_config

URL = "https://oai.example.org/oai"


def test_cli_made_sources_and_exports_with_group_appear_for_that_group_only(config: Config, broker) -> None:
    config = web_config(config)
    swath(config, "broker", "setup")
    store = Store(url=config.db_url)
    ann = member(config, store, "ann", "alpha")
    bob = member(config, store, "bob", "beta")
    made = swath(config, "harvest", "create", "Alpha repository", "--type", "oai_pmh", "--seed", URL,
                 "--collection-set", "alpha-cli", "--group", "alpha", "--json")
    export = swath(config, "export", "start", "oai_pmh", "--source", made["id"], "--group", "alpha", "--json")

    home = ann.get("/").text
    assert 'href="/sets/alpha-cli"' in home
    listed = ann.get("/sets/alpha-cli").text
    assert f'href="/collections/{made["id"]}"' in listed and "Alpha repository" in listed
    assert "command line" in listed  # the history says who made it
    assert ann.get(f"/collections/{made['id']}").status_code == 200
    assert f'href="/exports/{export["id"]}"' in ann.get("/exports").text
    assert ann.get(f"/exports/{export['id']}").status_code == 200

    assert "alpha-cli" not in bob.get("/").text and export["id"] not in bob.get("/exports").text
    for url in ("/sets/alpha-cli", f"/collections/{made['id']}", f"/exports/{export['id']}"):
        assert bob.get(url).status_code == 404, url

    # refused: a group that does not exist, another group's set, another group's collection
    with store.session() as s:
        sources, sets, exports = (s.scalar(select(func.count()).select_from(t)) for t in (Source, CollectionSet,
                                                                                          Export))
    missing = swath(config, "harvest", "create", "Other", "--type", "oai_pmh", "--seed", URL,
                    "--collection-set", "nowhere", "--group", "gamma", expect=None)
    assert missing.exit_code != 0 and "no group 'gamma'" in missing.output
    theirs = swath(config, "harvest", "create", "Sneaky", "--type", "oai_pmh", "--seed", URL,
                   "--collection-set", "alpha-cli", "--group", "beta", expect=None)
    assert theirs.exit_code != 0 and "belongs to another group" in theirs.output
    foreign = swath(config, "export", "start", "oai_pmh", "--source", made["id"], "--group", "beta", expect=None)
    assert foreign.exit_code != 0 and "group 'beta' has no collection" in foreign.output
    refused = swath(config, "harvest", "create", "Alpha repository", "--type", "oai_pmh", "--seed", URL,
                    "--collection-set", "alpha-new", "--group", "alpha", expect=None)
    # the group has that name (in another of its sets): refused, and the set made for it is gone again
    assert refused.exit_code != 0 and "exists already in this group" in refused.output
    with store.session() as s:
        after = tuple(s.scalar(select(func.count()).select_from(t)) for t in (Source, CollectionSet, Export))
    assert after == (sources, sets, exports)
    store.close()
