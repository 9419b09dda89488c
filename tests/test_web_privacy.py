"""Privacy by group beyond the pages of sets and collections: /status and the JSON endpoints need a login and
show a member only their groups' work (admins: all), and a run's JSON is reachable at its documented URL."""

from __future__ import annotations

from swath.core.config import Config
from swath.store import Store, repo
from tests.test_web import make_oai, make_set
from tests.webkit import client, login, member, user, web_config


def _two_groups(config: Config, store: Store) -> tuple[object, object, str, str]:
    """ann of alpha and bob of beta, each with a set and an OAI collection; bob's has a failed run naming its
    seed. (ann, bob, ann's collection URL, bob's run id)"""
    ann, bob = member(config, store, "ann", "alpha"), member(config, store, "bob", "beta")
    ann_collection = make_oai(ann, make_set(ann, "Alpha research"), name="Alpha papers")
    bob_collection = make_oai(bob, make_set(bob, "Beta secrets"), name="Beta hidden things",
                              seeds="https://beta-only.example.org/oai")
    with store.session() as s:
        src = repo.find_source(s, bob_collection.rsplit("/", 1)[1])
        job = repo.add_job(s, job_id="beta-run-1", source=src, routing_key="harvest.start.oai_pmh.oai_pmh",
                           trigger="manual")
        repo.fail_job(s, job, "http_error", "https://beta-only.example.org/oai answered 500")
    return ann, bob, ann_collection, "beta-run-1"


def test_status_needs_a_login_and_shows_a_member_only_their_groups(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    ann, bob, _collection, run_id = _two_groups(config, store)
    anonymous = client(config, store).get("/status")
    assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login?next=/status"
    page = ann.get("/status")
    assert page.status_code == 200 and "Alpha papers" in page.text
    for secret in ("Beta hidden things", "Beta secrets", "beta-only.example.org", run_id):
        assert secret not in page.text, secret
    assert 'id="queues"' not in page.text and 'id="rejected"' not in page.text  # the broker's: admins only
    page = bob.get("/status")
    assert "Beta hidden things" in page.text and run_id in page.text and "Alpha papers" not in page.text
    store.close()


def test_the_status_pages_live_parts_follow_the_same_rules(config: Config, broker) -> None:
    """/status/live.json (what live.js fetches): a login, a member's groups only, the broker's parts for admins."""
    config = web_config(config)
    store = Store(url=config.db_url)
    ann, bob, _collection, run_id = _two_groups(config, store)
    anonymous = client(config, store).get("/status/live.json")
    assert anonymous.status_code == 303 and anonymous.headers["location"] == "/login?next=/status/live.json"
    live = ann.get("/status/live.json")
    assert live.status_code == 200 and live.headers["content-type"] == "application/json"
    parts = live.json()["parts"]
    assert set(parts) == {"sources", "running", "recent", "exports", "volume"}  # no "operator": admins only
    assert "Alpha papers" in parts["sources"]
    for secret in ("Beta hidden things", "Beta secrets", "beta-only.example.org", run_id):
        assert secret not in live.text, secret
    theirs = bob.get("/status/live.json").json()["parts"]
    assert run_id in theirs["recent"] and "Beta hidden things" in theirs["sources"] and "Alpha" not in str(theirs)
    user(store, "root", admin=True)
    admin = client(config, store)
    login(admin, "root")
    everything = admin.get("/status/live.json").json()["parts"]
    assert "Alpha papers" in everything["sources"] and "Beta hidden things" in everything["sources"]
    assert 'id="queues"' in everything["operator"]
    store.close()


def test_an_admin_sees_every_group_on_the_status_page(config: Config, broker) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    _two_groups(config, store)
    user(store, "root", admin=True)
    admin = client(config, store)
    login(admin, "root")
    page = admin.get("/status").text
    assert "Alpha papers" in page and "Beta hidden things" in page and 'id="queues"' in page
    store.close()


def test_a_runs_json_needs_a_login_and_its_group(config: Config) -> None:
    config = web_config(config)
    store = Store(url=config.db_url)
    ann, bob, _collection, run_id = _two_groups(config, store)
    assert client(config, store).get(f"/runs/{run_id}.json").status_code == 303  # to the login page
    assert ann.get(f"/runs/{run_id}.json").status_code == 404
    record = bob.get(f"/runs/{run_id}.json")  # the documented URL of one's own run (the page's route shadowed it)
    assert record.status_code == 200 and record.headers["content-type"] == "application/json", record.text
    assert record.json()["id"] == run_id and record.json()["status"] == "completed failure"
    store.close()
