"""Issue #18 (3, 5): `swath harvest example` for every type, and settings checked against the harvest type at
`harvest create`/`update` and in harvest.start validation (options, seeds, credentials, collection ids)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from swath.cli import cli
from swath.commands.examples import example_start
from swath.core.config import Config
from swath.core.paths import resolve_inside
from swath.harvesters.registry import harvester_types
from swath.messages import settings
from swath.messages.model import HarvestStart
from swath.messages.validation import InvalidMessage, validate
from tests.test_messages import doc_examples

TYPES = [t.name for t in harvester_types()]
SECRET = "s3cr3t-value-never-shown"


def run(data_root: Path, *args: str):
    # SWATH_DATA_ROOT rather than --data-root: the option leaves the default store (sqlite) under ./swath-data
    return CliRunner().invoke(cli, list(args), env={"SWATH_DATA_ROOT": str(data_root), "SWATH_DB_URL": ""},
                              catch_exceptions=False)


def test_every_harvest_type_is_listed_once():
    assert len(TYPES) == len(set(TYPES)) >= 17  # every built-in platform's types


@pytest.mark.parametrize("harvest_type", TYPES)
def test_every_type_prints_a_valid_example_under_the_data_root(harvest_type, data_root):
    result = run(data_root, "harvest", "example", harvest_type)
    assert result.exit_code == 0, result.output
    body = json.loads(result.output)
    if body.get("credentials"):  # a placeholder is refused before the network, naming each field to fill in
        with pytest.raises(InvalidMessage) as refused:
            HarvestStart.from_dict(body)
        assert refused.value.code == "credential_placeholder"
        assert all(f"credentials.{name}" in refused.value.message for name in body["credentials"])
    filled = {name: "filled-in" for name in body.get("credentials", {})}
    start = HarvestStart.from_dict({**body, **({"credentials": filled} if filled else {})})  # then it validates
    assert start.type == harvest_type
    resolve_inside(data_root, body["path"])  # raises PathOutsideDataRoot if it is not under this data root
    assert Path(body["path"]).is_absolute() and Path(body["path"]).is_relative_to(data_root)
    found = settings.declaration(harvest_type)
    assert found is not None
    platform, kind = found
    names = set(body.get("credentials", {}))
    assert names == set(platform.credentials[0] if platform.credentials else ())
    assert all(value == f"YOUR_{name.upper()}" for name, value in body.get("credentials", {}).items())
    declared = platform.options.get("properties", {})
    assert body.get("options", {}) == {k: v["default"] for k, v in declared.items() if "default" in v}
    assert bool(body.get("seeds")) == bool(kind.seeds.example)


def test_example_ids_differ_so_each_run_is_a_new_harvest(data_root):
    config = Config.from_env({"SWATH_DATA_ROOT": str(data_root)})
    first = example_start("ckan", config, harvest_id="a")
    second = example_start("ckan", config)
    assert first["id"] == "a" and second["id"].startswith("example-ckan-")


def test_a_url_type_example_harvests_the_configured_api_root_or_the_given_seeds(data_root):
    config = Config.from_env({"SWATH_DATA_ROOT": str(data_root), "SWATH_CKAN_API_URL": "http://127.0.0.1:9/ckan"})
    assert [s["token"] for s in example_start("ckan", config)["seeds"]] == ["http://127.0.0.1:9/ckan"]
    given = example_start("ckan", config, seeds=("https://a.example", "https://b.example"))
    assert [s["token"] for s in given["seeds"]] == ["https://a.example", "https://b.example"]
    # a social type's seeds are account names, not its API root
    twitter = Config.from_env({"SWATH_DATA_ROOT": str(data_root), "SWATH_TWITTER_API_URL": "http://127.0.0.1:9"})
    assert "127.0.0.1" not in json.dumps(example_start("twitter_user_timeline_2", twitter)["seeds"])


def test_an_unknown_type_is_refused_with_the_known_ones(data_root):
    result = run(data_root, "harvest", "example", "ckann")
    assert result.exit_code == 1
    assert "[unknown_type]" in result.output and "ckan" in result.output


# ------------------------------------------------------------------ harvest create / update


def sources(data_root: Path) -> list[dict]:
    result = run(data_root, "harvest", "sources", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


@pytest.mark.parametrize(("args", "named"), [
    (["--type", "ckan", "--seed", "demo.ckan.org"], "seeds[0].token: 'demo.ckan.org' is not an http(s) URL"),
    (["--type", "ckan", "--seed", "https://demo.ckan.org", "--option", "rows=ten"], "rows takes a whole number"),
    (["--type", "ckan", "--seed", "https://demo.ckan.org", "--option", "rows=0"], "options.rows"),
    (["--type", "ckan", "--seed", "https://demo.ckan.org", "--option", "bogus=1"], "options.bogus"),
    (["--type", "ckan", "--seed", "https://demo.ckan.org", "--collection-set", "../../etc"], "--collection-set"),
    (["--type", "ckan", "--seed", "https://demo.ckan.org", "--collection", "a/b"], "--collection"),
    (["--type", "tumblr_blog_posts", "--seed-uid", "gwulibraries"], "needs api_key"),
    (["--type", "flickr_user", "--seed", "x", "--credential", "key=env:K"], "needs key and secret"),
    (["--type", "metashare_sync", "--credential", "username=env:U", "--credential", "password=env:P"],
     "needs at least one seed"),
    (["--type", "twitter_search_2", "--seed", "q", "--option", "incremental=maybe"], "incremental takes true or false"),
])
def test_create_refuses_settings_the_type_would_refuse(data_root, args, named):
    result = run(data_root, "harvest", "create", "src", *args)
    assert result.exit_code == 1
    assert "error [bad_request]" in result.output and named in result.output
    assert sources(data_root) == []  # nothing stored


def test_create_reads_option_values_by_their_declared_type(data_root):
    result = run(data_root, "harvest", "create", "c", "--type", "ckan", "--seed", "https://demo.ckan.org",
                 "--option", "rows=10", "--option", "fq=2020", "--option", "incremental=no", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["options"] == {"rows": 10, "fq": "2020", "incremental": False}
    result = run(data_root, "harvest", "create", "f", "--type", "flickr_user", "--seed", "someone",
                 "--credential", "key=env:FLICKR_KEY", "--credential", "secret=env:FLICKR_SECRET",
                 "--option", "sizes=Thumbnail,Large", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["options"] == {"sizes": ["Thumbnail", "Large"]}


def test_create_accepts_either_credential_set_and_never_prints_values(data_root):
    result = run(data_root, "harvest", "create", "t", "--type", "twitter_search_2", "--seed", "#libraries",
                 "--credential", "consumer_key=env:TW_KEY", "--credential", "consumer_secret=env:TW_SECRET")
    assert result.exit_code == 0, result.output
    result = run(data_root, "harvest", "create", "t2", "--type", "twitter_search_2", "--seed", "#libraries",
                 "--credential", "consumer_key=env:TW_KEY")
    assert result.exit_code == 1
    assert "needs bearer_token, or consumer_key and consumer_secret" in result.output


def test_update_checks_like_create_and_asks_for_validation_again(data_root):
    assert run(data_root, "harvest", "create", "c", "--type", "ckan", "--seed", "https://demo.ckan.org",
               "--option", "fq=a").exit_code == 0
    assert run(data_root, "harvest", "validate", "c").exit_code == 0
    refused = run(data_root, "harvest", "update", "c", "--option", "rows=ten")
    assert refused.exit_code == 1 and "rows takes a whole number" in refused.output
    assert run(data_root, "harvest", "update", "c", "--seed", "demo.ckan.org").exit_code == 1
    (kept,) = sources(data_root)
    assert kept["validation"] == "accepted" and kept["options"] == {"fq": "a"}
    result = run(data_root, "harvest", "update", "c", "--option", "rows=20", "--unset-option", "fq", "--json")
    assert result.exit_code == 0, result.output
    updated = json.loads(result.output)
    assert updated["options"] == {"rows": 20} and updated["validation"] == "pending"
    assert updated["seeds"] == kept["seeds"]


# ------------------------------------------------------------------ harvest.start validation


def start(**overrides) -> dict:
    body = {"id": "h1", "type": "ckan", "path": "collections/s/c", "seeds": [{"id": "s1", "token": "https://x.org"}]}
    return {**body, **overrides}


@pytest.mark.parametrize(("body", "named"), [
    (start(options={"rows": "ten"}), "options.rows: 'ten' is not a whole number"),
    (start(options={"bogus": 1}), "options.bogus: not an option of CKAN"),
    (start(seeds=[{"id": "s1", "token": "demo.ckan.org"}]), "seeds[0].token"),
    (start(seeds=[{"id": "s1", "uid": "x"}]), "seeds[0].token"),
    (start(seeds=[]), "needs at least one seed"),
    (start(type="tumblr_blog_posts", seeds=[{"id": "s", "uid": "b"}], credentials={"api_kye": SECRET}),
     "credentials: tumblr_blog_posts needs api_key"),
    (start(type="tumblr_blog_posts", seeds=[{"id": "s", "uid": "b"}], credentials={"api_key": ""}), "needs api_key"),
])
def test_harvest_start_is_checked_against_its_type(body, named):
    with pytest.raises(InvalidMessage) as caught:
        validate("harvest_start", body)
    assert caught.value.code == "schema_invalid"
    assert named in str(caught.value) and SECRET not in str(caught.value)


def test_sfm_messages_stay_valid():
    for name, body in doc_examples():
        if name == "harvest_start":
            validate("harvest_start", body)
    # what sfm-ui 2.x puts in a user timeline collection's harvest_options
    validate("harvest_start", {
        "id": "sfmui:9", "type": "twitter_user_timeline_2", "path": "collections/a/b",
        "seeds": [{"id": "s", "uid": "12"}], "credentials": {"bearer_token": "t"},
        "options": {"incremental": True, "deactivate_not_found_seeds": False, "deactivate_unauthorized_seeds": False,
                    "deactivate_suspended_seeds": False, "media": False, "web_resources": False}})
    validate("harvest_start", {"id": "s:1", "type": "twitter_sample", "path": "p",
                               "credentials": {"bearer_token": "t"}})


def test_an_undeclared_type_is_left_to_its_backend():
    validate("harvest_start", start(type="random_plugin", options={"anything": 1}, seeds=[]))


def test_a_misspelt_type_is_named_as_missing(data_root, tmp_path):
    message = tmp_path / "start.json"
    message.write_text(json.dumps({"id": "x", "typ": "ckan", "path": "collections/a/b"}))
    # a real process: run_message writes to the sys.stderr it was defined with, which CliRunner does not capture
    result = subprocess.run([sys.executable, "-m", "swath", "harvest", "run", str(message)], capture_output=True,
                            text=True, timeout=300, env={**os.environ, "SWATH_DATA_ROOT": str(data_root)})
    assert result.returncode == 2
    assert "'type' is a required property" in result.stderr and "harvest type ''" not in result.stderr


def test_a_worker_refuses_a_start_its_type_would_refuse_with_a_status_naming_the_field(config, broker):
    from swath.messages.broker import Publisher
    from tests.brokerprobe import running_worker, until_final

    body = start(id="bad:1", options={"rows": "ten"})
    with running_worker(config, "ckan_harvester"), Publisher(config=config) as requester:
        requester.publish("harvest.start.ckan.ckan", body).result(120)
        (key, final), = until_final(broker, config.status_queue, timeout=120)
    assert key == "harvest.status.ckan.ckan" and final["id"] == "bad:1"
    assert final["status"] == "completed failure"
    assert [e["code"] for e in final["errors"]] == ["schema_invalid"]
    assert "options.rows" in final["errors"][0]["message"]
