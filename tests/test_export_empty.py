"""Exports never succeed empty-handed: bodies that cannot be read fail the export unless skipping was asked
(item_unreadable), and an export that exports nothing says why (no_warcs, export_empty), a failure except
for a date range the user asked for. WARCs come from the real harvest engine or SFM's fixtures; exports run
through the real export job, exit codes through `swath export run` in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swath.messages import codes
from tests.backendkit import harvest
from tests.fakes.httpserver import Request, Response
from tests.fakes.oai import SickleEndpoint
from tests.fakes.social import run_harvest_job, start_body
from tests.fakes.twitter import BEARER_TOKEN, FakeTwitter, matches
from tests.test_export import collections, expected_items, export, out_dir, read_rows, run, warcs_of  # noqa: F401


class SpoilingTwitter(FakeTwitter):
    """FakeTwitter whose last search page goes out spoiled while `spoil` is set: "zstd" (compressed by the zstd
    tool and labelled so, whatever the request offered, as a misconfigured proxy may) or "html" (a proxy's
    error page sent with status 200). `good_ids` are the tweets of the pages sent as they were."""

    def __init__(self, **kwargs) -> None:
        self.spoil: str | None = None
        self.good_ids: list[str] = []
        self.spoiled: list[str] = []
        super().__init__(**kwargs)

    def search(self, req: Request) -> Response:
        resp = super().search(req)
        page = json.loads(resp.body) if resp.status == 200 else {}
        if not page.get("data"):
            return resp
        if self.spoil is None or "next_token" in page["meta"]:
            self.good_ids += [t["id"] for t in page["data"]]
            return resp
        self.spoiled.append(self.spoil)
        if self.spoil == "zstd":
            resp.body = subprocess.run(["zstd", "-q", "-c"], input=resp.body, stdout=subprocess.PIPE, check=True).stdout
            resp.headers = {**resp.headers, "Content-Encoding": "zstd"}
        else:
            resp.body, resp.content_type = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"
        return resp


def swath_export(data_root: Path, body: dict, *flags: str, cwd: Path | None = None) -> tuple[int, dict]:
    """`swath export run` on the message in its own process (from `cwd`, with `data_root` as given, relative
    or not): its exit code and final status."""
    message = Path(cwd or ".", data_root) / f"{body['id']}.json"
    message.write_text(json.dumps(body))
    proc = subprocess.run([sys.executable, "-m", "swath", "--data-root", str(data_root), "export", "run",
                           str(message.resolve()), *flags], capture_output=True, text=True, env=dict(os.environ),
                          cwd=cwd, timeout=300)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    final = [m["message"] for m in lines if m["routing_key"].startswith("export.status.")][-1]
    return proc.returncode, final


def codes_of(notes: list[dict]) -> list[str]:
    return [n["code"] for n in notes]


# ---------- 1. unreadable bodies ----------

def test_unreadable_bodies_fail_the_export_unless_skipping_was_asked(run, config):
    with SpoilingTwitter(page_size=4) as fake:
        cfg = config.with_api_url("twitter", fake.url)
        hits = [t["id"] for t in fake.world.tweets if matches("gwu", t)]
        warcs = []
        for spoil in ("zstd", "html"):  # two harvests of one collection: one WARC each, one spoiled page each
            fake.spoil = spoil
            out = run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": {"query": "gwu"}}],
                                                  credentials={"bearer_token": BEARER_TOKEN}))
            warcs += [w["path"] for w in out.warcs]
    assert fake.spoiled == ["zstd", "html"] and len(warcs) == 2
    assert 0 < len(fake.good_ids) < 2 * len(hits)  # the spoiled pages held tweets the export cannot see
    stored = [payload for _uri, status, payload in out.records() if status == 200]
    assert b"502 Bad Gateway" in stored[-1]  # the WARC holds the body as it was sent

    body = export("twitter_search_2", "c1", format="dehydrate", dedupe=False)
    for workers in (1, 2):  # the second export reads the kept record offsets (.swath/records) with reader processes
        status = run(body, workers=workers)
        assert status["status"] == "completed failure"
        assert codes_of(status["errors"]) == [codes.ITEM_UNREADABLE] * 3  # one per WARC, then the summary
        per_warc = {warc: [e["message"] for e in status["errors"] if e["message"].startswith(warc)] for warc in warcs}
        assert all(len(m) == 1 and ": 1 response body(ies)" in m[0] for m in per_warc.values()), per_warc
        assert "'zstd' is not one swath decodes" in per_warc[warcs[0]][0]
        assert "its body is not JSON" in per_warc[warcs[1]][0]
        assert "2 response body(ies)" in status["errors"][-1]["message"]
        assert "skip_unreadable" in status["errors"][-1]["message"]
        assert not out_dir(run.config).exists() or list(out_dir(run.config).iterdir()) == []  # no files kept

    code, final = swath_export(config.data_root, {**body, "id": "cli"})
    assert code == 1 and final["status"] == "completed failure"
    code, final = swath_export(config.data_root, {**body, "id": "cli"}, "--skip-unreadable")
    assert code == 0 and final["status"] == "completed success"
    assert codes_of(final["warnings"]) == [codes.ITEM_UNREADABLE] * 2 and final["items"] == len(fake.good_ids)
    assert sorted(Path(final["files"][0]).read_text().split()) == sorted(fake.good_ids)

    status = run({**body, "id": "opt", "options": {"skip_unreadable": True}})  # the message's own option
    assert status["status"] == "completed success" and status["items"] == len(fake.good_ids)


def test_everything_unreadable_and_skipped_is_still_no_export(run, config):
    with SpoilingTwitter(page_size=1000) as fake:  # one page: spoiled
        fake.spoil = "zstd"
        cfg = config.with_api_url("twitter", fake.url)
        run_harvest_job(cfg, start_body("twitter_search_2", [{"id": "s1", "token": {"query": "gwu"}}],
                                        credentials={"bearer_token": BEARER_TOKEN}))
    assert fake.spoiled == ["zstd"] and fake.good_ids == []
    status = run(export("twitter_search_2", "c1", options={"skip_unreadable": True}))
    assert status["status"] == "completed failure"
    assert codes_of(status["warnings"]) == [codes.ITEM_UNREADABLE]
    assert codes_of(status["errors"]) == [codes.EXPORT_EMPTY]
    assert "unreadable (1 skipped" in status["errors"][0]["message"]


# ---------- 2. nothing to export ----------

def test_an_unknown_collection_fails_naming_the_id_and_the_data_root(config, collections):
    # a relative --data-root, resolved from the directory swath runs in: the message names the resolved path
    code, final = swath_export(Path(config.data_root.name), export("flickr_user", "no-such-collection"),
                               cwd=config.data_root.parent)
    assert code == 1 and final["status"] == "completed failure"
    [error] = final["errors"]
    assert error["code"] == codes.NO_WARCS
    assert "no-such-collection" in error["message"] and str(config.data_root.resolve()) in error["message"]
    assert "SWATH_DATA_ROOT" in error["message"]
    assert not out_dir(config).exists() or list(out_dir(config).iterdir()) == []


def test_a_collection_without_warcs_fails(run, data_root):
    (data_root / "collections" / "s" / "fresh" / "2024").mkdir(parents=True)
    status = run(export("flickr_user", "fresh"))
    assert status["status"] == "completed failure" and codes_of(status["errors"]) == [codes.NO_WARCS]
    assert str(data_root.resolve() / "collections" / "s" / "fresh") in status["errors"][0]["message"]


def test_a_seed_export_of_an_empty_data_root_fails(run):
    status = run(export("flickr_user", seeds=[{"id": "s", "uid": "someone"}]))
    assert status["status"] == "completed failure" and codes_of(status["errors"]) == [codes.NO_WARCS]


def test_an_export_type_the_collection_does_not_hold_fails(run, collections):
    photos = expected_items(warcs_of(collections, "1"), "flickr_photo")
    assert photos  # the collection is not empty: it holds Flickr photos, no tweets
    status = run(export("twitter_search", "1"))
    assert status["status"] == "completed failure" and codes_of(status["errors"]) == [codes.EXPORT_EMPTY]
    message = status["errors"][0]["message"]
    assert "no twitter_search items" in message and f"the {len(warcs_of(collections, '1'))} WARC(s)" in message
    assert "export type matches" in message


def test_a_ckan_export_of_an_oai_collection_fails(run, config, fixtures_dir):
    endpoint = SickleEndpoint(fixtures_dir)
    with endpoint.server as server:
        harvested = harvest(config, "oai_pmh", f"{server.url}/oai", path="collections/cs-1/c-1")
    assert harvested.by_status("done")  # the collection holds OAI-PMH datasets
    assert run(export("oai_pmh", "c-1", id="oai"))["status"] == "completed success"
    status = run(export("ckan", "c-1"))
    assert status["status"] == "completed failure" and codes_of(status["errors"]) == [codes.EXPORT_EMPTY]
    assert "no ckan items" in status["errors"][0]["message"]


def test_a_collection_of_only_api_errors_fails(run, collections):
    # SFM's weibo_search fixture: the API answered 400 (a missing app key), so no item was ever harvested
    assert expected_items(warcs_of(collections, "3"), "weibo_post") == []
    status = run(export("weibo_search", "3"))
    assert status["status"] == "completed failure" and codes_of(status["errors"]) == [codes.EXPORT_EMPTY]
    assert "1 weibo_search answer(s), every one an API error" in status["errors"][0]["message"]


def test_seeds_whose_uid_matches_nothing_fail(run, collections):
    photos = expected_items(warcs_of(collections, "1"), "flickr_photo")
    status = run(export("flickr_user", seeds=[{"id": "s", "uid": "nobody@N00"}]))
    assert status["status"] == "completed failure" and codes_of(status["errors"]) == [codes.EXPORT_EMPTY]
    assert f"none of the {len(photos)} flickr_user item(s)" in status["errors"][0]["message"]
    assert "nobody@N00" in status["errors"][0]["message"]
    owner = photos[0]["owner"]["nsid"]  # a uid that matches: the same export succeeds
    status = run(export("flickr_user", seeds=[{"id": "s", "uid": owner}], id="ok"))
    assert status["status"] == "completed success"
    assert status["items"] == sum(1 for p in photos if p["owner"]["nsid"] == owner)


@pytest.mark.parametrize("field", ["item_date", "harvest_date"])
def test_an_asked_date_range_with_nothing_in_it_is_a_warning(run, config, collections, field):
    photos = expected_items(warcs_of(collections, "1"), "flickr_photo")
    body = export("flickr_user", "1", **{f"{field}_start": "1990-01-01T00:00:00Z",
                                         f"{field}_end": "1990-12-31T00:00:00Z"})
    if field == "item_date":  # through the CLI once: an empty range asked for exits 0
        code, final = swath_export(config.data_root, body)
        assert code == 0
    else:
        final = run(body)
    assert final["status"] == "completed success" and final["items"] == 0
    assert codes_of(final["warnings"]) == [codes.EXPORT_EMPTY]
    assert "asked date range" in final["warnings"][0]["message"]
    if field == "item_date":
        assert f"{len(photos)} flickr_user item(s)" in final["warnings"][0]["message"]
    [csv_file] = final["files"]
    assert read_rows(Path(csv_file)) == [] and Path(csv_file).read_text().startswith("photo_id")  # header only


def test_a_current_state_with_every_item_deleted_is_a_warning(run, config, fixtures_dir):
    endpoint = SickleEndpoint(fixtures_dir)
    with endpoint.server as server:
        harvest(config, "oai_pmh", f"{server.url}/oai", path="collections/cs-1/c-1")
        endpoint.overrides["ListRecords"] = "noRecordsMatch.xml"  # everything disappeared
        second = harvest(config, "oai_pmh", f"{server.url}/oai", path="collections/cs-1/c-1",
                         options={"incremental": False})
    assert second.by_status("deleted")
    status = run(export("oai_pmh", "c-1"))
    assert status["status"] == "completed success" and status["items"] == 0
    assert codes_of(status["warnings"]) == [codes.EXPORT_EMPTY]
    assert "deleted at the source" in status["warnings"][0]["message"]
