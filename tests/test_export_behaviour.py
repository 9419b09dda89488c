"""Export options and failure paths: dedupe, segments, date filters, seeds, truncated/missing WARCs,
NDJSON stream segments, status messages, atomic files (how WARCs are read: test_export_readers.py).
Expectations are computed from the inputs."""

from __future__ import annotations

import datetime as dt
import io
import json
import shutil
import threading
from pathlib import Path

import orjson
import pytest
from twarc.expansions import ensure_flattened
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from swath.core.jobs import JobContext, JobInterrupted
from swath.exporters import registry
from swath.exporters.dedupe import SeenIds, dedupe_key
from swath.exporters.warc_index import ScanIndex
from swath.messages import codes
from tests.test_export import (  # noqa: F401 - fixtures
    collections,
    expected_items,
    export,
    item_id,
    out_dir,
    read_rows,
    run,
    warcio_bodies,
    warcs_of,
)


def write_warc(path: Path, responses: list[tuple[str, str, bytes]], *, segments: bool = False) -> None:
    """A swath-shaped WARC: one response record per (url, WARC-Date, body); `segments`: the segments of a
    recorded stream, numbered."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        writer = WARCWriter(fh, gzip=True)
        for number, (url, date, body) in enumerate(responses, 1):
            http = StatusAndHeaders("200 OK", [("Content-Type", "application/json")], protocol="HTTP/1.1")
            extra = {"WARC-Swath-Stream-Segment": str(number)} if segments else {}
            rec = writer.create_warc_record(url, "response", payload=io.BytesIO(body), http_headers=http,
                                            warc_headers_dict={"WARC-Date": date, **extra})
            writer.write_record(rec)


def v2_tweet(tid: int, author: str, created: str, text: str = "hello") -> dict:
    return {"id": str(tid), "author_id": author, "created_at": created, "text": text,
            "edit_history_tweet_ids": [str(tid)]}


def v2_page(tweets: list[dict]) -> bytes:
    users = [{"id": a, "username": f"user{a}", "name": f"User {a}"} for a in sorted({t["author_id"] for t in tweets})]
    return orjson.dumps({"data": tweets, "includes": {"users": users}, "meta": {"result_count": len(tweets)}})


SEARCH = "https://api.twitter.com/2/tweets/search/recent?query=x"
STREAM = "https://api.twitter.com/2/tweets/search/stream?tweet.fields=created_at"


# ---------- dedupe ----------

def test_dedupe_keeps_one_copy_of_each_id(run, collections):
    # The tumblr WARC fetched the newest post twice (limit=1 probe, then the page of 50).
    posts = expected_items(warcs_of(collections, "tumblr"), "tumblr_post")
    ids = [str(p["id"]) for p in posts]
    assert len(set(ids)) < len(ids)
    run(export("tumblr_blog_posts", "tumblr", format="dehydrate"))
    assert sorted((out_dir(run.config) / "exp1_001.txt").read_text().split()) == sorted(ids)
    run(export("tumblr_blog_posts", "tumblr", format="dehydrate", dedupe=True, id="exp2"))
    assert sorted((out_dir(run.config) / "exp2_001.txt").read_text().split()) == sorted(set(ids))


def test_dedupe_keeps_the_latest_harvested_copy(run, data_root):
    coll = data_root / "collections" / "s" / "c1"
    old = [v2_tweet(i, "7", "2023-01-01T00:00:00.000Z", text=f"old {i}") for i in range(1, 6)]
    new = [v2_tweet(i, "7", "2023-01-01T00:00:00.000Z", text=f"new {i}") for i in range(3, 8)]
    # File names sort the newer harvest first, so only the harvest date can tell which copy is latest.
    write_warc(coll / "a.warc.gz", [(SEARCH, "2023-02-02T00:00:00Z", v2_page(new))])
    write_warc(coll / "b.warc.gz", [(SEARCH, "2023-02-01T00:00:00Z", v2_page(old))])
    run(export("twitter_search_2", "c1", dedupe=True))
    rows = read_rows(out_dir(run.config) / "exp1_001.csv")
    texts = {r["id"]: r["text"] for r in rows}
    assert len(rows) == len(texts) == len({t["id"] for t in old + new})
    for t in old + new:
        latest = next((n for n in new if n["id"] == t["id"]), t)
        assert texts[t["id"]] == latest["text"]
    run(export("twitter_search_2", "c1", id="nodedupe"))
    assert len(read_rows(out_dir(run.config) / "nodedupe_001.csv")) == len(old) + len(new)


def _new(seen: SeenIds, table: str, item_id: str) -> bool:
    """Whether the id was new to the table (and is now recorded)."""
    return seen.add_keys(table, [dedupe_key(item_id)]) is None


def test_seen_ids_spill_to_disk_and_stay_exact(tmp_path):
    seen = SeenIds(spill_dir=tmp_path, memory_limit=100)
    # today's 19-digit tweet ids, ids past 63 bits, leading zeros, non-ASCII digits, words
    ids = ([str(i) for i in range(500)] + [str(1_900_000_000_000_000_000 + i) for i in range(50)]
           + [str(2**64 + 1), "0999", "abc", "x" * 40, "١٢٣"])
    assert all(_new(seen, "t", i) for i in ids)
    assert not any(_new(seen, "t", i) for i in ids)
    assert _new(seen, "other", "1")  # the same id in another table is another item
    assert _new(seen, "t", "999") and not _new(seen, "t", "999")  # "0999" was another id
    seen.close()
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("memory_limit", [1_000_000, 5])
def test_seen_ids_batches_report_each_repeat(tmp_path, memory_limit):
    seen = SeenIds(spill_dir=tmp_path, memory_limit=memory_limit)
    first = [dedupe_key(str(i)) for i in range(10)]
    assert seen.add_keys("t", first) is None  # all new: settled without a per-key answer
    again = [dedupe_key(i) for i in ("3", "10", "11", "10", "abc")]
    assert seen.add_keys("t", again) == [False, True, True, False, True]
    assert seen.add_keys("u", again) == [True, True, True, False, True]
    seen.close()


# ---------- segments ----------

@pytest.mark.parametrize("fmt", ["csv", "json", "xlsx", "dehydrate"])
def test_segments_exactly_n_and_n_plus_one(run, collections, fmt):
    expected = [item_id("flickr_photo", i) for i in expected_items(warcs_of(collections, "1"), "flickr_photo")]
    n = len(expected)
    ext = {"dehydrate": "txt"}.get(fmt, fmt)
    run(export("flickr_user", "1", format=fmt, segment_size=n, id="exact"))
    assert sorted(p.name for p in out_dir(run.config).iterdir()) == [f"exact_001.{ext}"]
    run(export("flickr_user", "1", format=fmt, segment_size=n - 1, id="plus"))
    files = sorted(p for p in out_dir(run.config).iterdir() if p.name.startswith("plus"))
    assert [p.name for p in files] == [f"plus_001.{ext}", f"plus_002.{ext}"]

    def ids(p: Path) -> list[str]:
        return p.read_text().split() if fmt == "dehydrate" else [r["photo_id"] for r in read_rows(p)]

    assert [len(ids(p)) for p in files] == [n - 1, 1]
    assert ids(files[0]) + ids(files[1]) == expected


# ---------- filters ----------

def _dates(kind_items, key):
    return sorted({dt.datetime.strptime(t[key], "%a %b %d %H:%M:%S %z %Y") for t in kind_items})


def test_item_date_filter_edges_are_inclusive(run, collections):
    tweets = expected_items(warcs_of(collections, "twitter"), "twitter_v1")
    dates = _dates(tweets, "created_at")
    lo, hi = dates[10], dates[-10]
    inside = [t["id_str"] for t in tweets
              if lo <= dt.datetime.strptime(t["created_at"], "%a %b %d %H:%M:%S %z %Y") <= hi]
    # Given in another timezone than the data's, to show the comparison is on instants.
    tz = dt.timezone(dt.timedelta(hours=-5))
    run(export("twitter_search", "twitter", format="dehydrate", item_date_start=lo.astimezone(tz).isoformat(),
               item_date_end=hi.astimezone(tz).isoformat()))
    assert (out_dir(run.config) / "exp1_001.txt").read_text().split() == inside
    second = dt.timedelta(seconds=1)
    run(export("twitter_search", "twitter", format="dehydrate", id="narrow",
               item_date_start=(lo + second).isoformat(), item_date_end=(hi - second).isoformat()))
    narrow = (out_dir(run.config) / "narrow_001.txt").read_text().split()
    on_edges = [t["id_str"] for t in tweets
                if dt.datetime.strptime(t["created_at"], "%a %b %d %H:%M:%S %z %Y") in (lo, hi)]
    assert on_edges and sorted(narrow + on_edges) == sorted(inside)


def test_harvest_date_filter_edges(run, collections):
    paths = warcs_of(collections, "1")
    records = [(url, date) for url, date, _ in warcio_bodies(paths) if "photos.getInfo" in url]
    dates = sorted({dt.datetime.fromisoformat(d.replace("Z", "+00:00")) for _, d in records})
    lo = dates[len(dates) // 2]
    naive = lo.replace(tzinfo=None).isoformat()  # SFM sends naive UTC
    expected = sum(1 for _, d in records if dt.datetime.fromisoformat(d.replace("Z", "+00:00")) >= lo)
    run(export("flickr_user", "1", format="dehydrate", harvest_date_start=naive))
    assert len((out_dir(run.config) / "exp1_001.txt").read_text().split()) == expected
    run(export("flickr_user", "1", format="dehydrate", harvest_date_end=naive, id="before"))
    before = sum(1 for _, d in records if dt.datetime.fromisoformat(d.replace("Z", "+00:00")) <= lo)
    assert len((out_dir(run.config) / "before_001.txt").read_text().split()) == before
    assert expected + before == len(records) + sum(1 for _, d in records
                                                   if dt.datetime.fromisoformat(d.replace("Z", "+00:00")) == lo)


# ---------- seeds vs collection ----------

def test_seed_export_keeps_only_the_seeds_items(run, collections):
    photos = expected_items(warcs_of(collections, "1"), "flickr_photo")
    owners = sorted({p["owner"]["nsid"] for p in photos})
    assert len(owners) > 1
    chosen = owners[0]
    body = export("flickr_user", format="dehydrate", seeds=[{"id": "seed1", "uid": chosen}])
    status = run(body)
    assert status["status"] == "completed success"
    got = (out_dir(run.config) / "exp1_001.txt").read_text().split()
    assert got == [p["id"] for p in photos if p["owner"]["nsid"] == chosen]


def test_collection_export_opens_only_its_own_warcs(data_root, collections):
    index = ScanIndex(data_root=data_root)
    assert index.warcs_for("1") == warcs_of(collections, "1")
    assert set(index.warcs_for("twitter")).isdisjoint(index.warcs_for("1"))
    assert (data_root / ".swath" / "warc-index.json").is_file()
    new = collections / "1" / "2016" / "03" / "01" / "00" / "late.warc.gz"
    new.parent.mkdir(parents=True)
    shutil.copy(warcs_of(collections, "1")[0], new)
    assert new in ScanIndex(data_root=data_root).warcs_for("1")  # the cached index noticed the new dir


# ---------- bad WARCs ----------

def test_truncated_warc_warns_and_keeps_good_records(run, data_root, collections, fixtures_dir):
    paths = warcs_of(collections, "twitter")
    big = next(p for p in paths if p.name.startswith("test_1-20151202190229530"))
    data = big.read_bytes()
    big.write_bytes(data[: len(data) // 2])
    status = run(export("twitter_search", "twitter", format="dehydrate"))
    assert status["status"] == "completed success"
    warnings = [w for w in status["warnings"] if w["code"] == codes.WARC_TRUNCATED]
    assert len(warnings) == 1 and big.name in warnings[0]["message"]
    # Expected: what warcio reads from all files (the cut page is not JSON, so it yields nothing).
    got = (out_dir(run.config) / "exp1_001.txt").read_text().split()
    assert got == [t["id_str"] for t in expected_items(paths, "twitter_v1")]
    kept = expected_items([big], "twitter_v1")
    whole = expected_items([fixtures_dir / "sfm-warcs" / "twitter" / big.name], "twitter_v1")
    assert 0 < len(kept) < len(whole)  # the pages before the cut survived, the rest is gone


def test_record_offsets_are_found_once_per_warc(run, data_root, collections):
    """A second export of the same WARCs reads their record offsets from the kept scan (warnings too);
    a WARC that changed is scanned again."""
    import os

    from swath.exporters.scans import CACHE_DIR

    paths = warcs_of(collections, "twitter")
    big = next(p for p in paths if p.name.startswith("test_1-20151202190229530"))
    big.write_bytes(big.read_bytes()[: big.stat().st_size // 2])  # cut: its warning must survive the cache
    expected = [t["id_str"] for t in expected_items(paths, "twitter_v1")]

    def exported(export_id: str) -> tuple[list[str], list[dict]]:
        status = run(export("twitter_search", "twitter", format="dehydrate", id=export_id))
        assert status["status"] == "completed success"
        truncated = [w for w in status["warnings"] if w["code"] == codes.WARC_TRUNCATED]
        return (out_dir(run.config) / f"{export_id}_001.txt").read_text().split(), truncated

    first, warned = exported("a")
    kept = sorted((data_root / CACHE_DIR).glob("*.json"))
    assert first == expected and len(warned) == 1 and len(kept) == len(paths)
    again, warned_again = exported("b")
    assert again == expected and warned_again == warned

    # Proof the kept scans are what the second export read: drop a record from every kept scan ...
    for cache in kept:
        data = json.loads(cache.read_text())
        data["refs"] = data["refs"][1:]
        cache.write_text(json.dumps(data))
    fewer, _ = exported("c")
    assert len(fewer) < len(expected)
    # ... and a WARC whose mtime changed is scanned again.
    for path in paths:
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    rescanned, _ = exported("d")
    assert rescanned == expected


def test_missing_warc_is_a_warning(run, data_root, collections):
    index = ScanIndex(data_root=data_root)
    gone = data_root / "collections" / "set1" / "1" / "gone.warc.gz"
    index.add("1", gone)
    status = run(export("flickr_user", "1", format="dehydrate"), index=index)
    assert status["status"] == "completed success"
    assert [w["code"] for w in status["warnings"]] == [codes.WARC_MISSING]
    assert str(gone) in status["warnings"][0]["message"]


def test_oddly_shaped_tweets_export_what_they_hold(run, data_root):
    """Untrusted API JSON: a field of the wrong type empties the columns it feeds, not the export."""
    coll = data_root / "collections" / "s" / "odd"
    good = v2_tweet(1, "7", "2023-01-01T00:00:00.000Z")
    odd = [
        {**v2_tweet(2, "7", "2023-01-01T00:00:00.000Z"),
         "entities": {"hashtags": [1, {"tag": "ok"}], "mentions": None}},
        {**v2_tweet(3, "7", "2023-01-01T00:00:00.000Z"), "referenced_tweets": [1, "x"], "public_metrics": [5]},
        {**v2_tweet(4, "7", "2023-01-01T00:00:00.000Z"), "attachments": {"poll_ids": "p", "media_keys": [["k"]]}},
        {**v2_tweet(5, "7", "2023-01-01T00:00:00.000Z"), "geo": [], "edit_controls": "soon"},
        {**v2_tweet(6, "7", "2023-01-01T00:00:00.000Z"), "author_id": ["7"]},
    ]
    page = orjson.loads(v2_page([good, *odd[:-1]]))
    page["data"].append(odd[-1])
    page["includes"]["users"].append({"id": "8", "entities": {"description": {"hashtags": "zz"}, "url": [1]}})
    page["includes"]["tweets"] = ["not a tweet", {"id": ["x"]}]
    write_warc(coll / "odd.warc.gz", [(SEARCH, "2023-02-01T00:00:00Z", orjson.dumps(page))])
    status = run(export("twitter_search_2", "odd"))
    assert status["status"] == "completed success", status
    rows = {r["id"]: r for r in read_rows(out_dir(run.config) / "exp1_001.csv")}
    assert sorted(rows) == sorted(t["id"] for t in [good, *odd])
    assert rows["1"]["author.username"] == "user7"  # the page's includes still resolve for good tweets
    assert rows["2"]["entities.hashtags"] == '["#ok"]' and rows["2"]["entities.mentions"] == ""
    assert rows["3"]["public_metrics.like_count"] == "" and rows["3"]["text"] == "hello"
    assert rows["5"]["edit_controls.edits_remaining"] == "" and rows["5"]["created_at"] == "2023-01-01T00:00:00.000Z"


# ---------- swath WARCs: NDJSON stream segments ----------

def test_ndjson_stream_segments(run, data_root):
    coll = data_root / "collections" / "s" / "streamed"
    tweets = [v2_tweet(100 + i, str(i % 3), f"2023-03-0{1 + i % 5}T10:00:00.000Z") for i in range(12)]
    lines = [orjson.dumps({"data": t, "includes": {"users": [{"id": t["author_id"], "username": "u"}]},
                           "matching_rules": [{"id": "1", "tag": "x"}]}) for t in tweets]
    seg1 = b"\r\n".join(lines[:5]) + b"\r\n\r\n"  # keep-alive blank lines too
    seg2 = b"\n".join(lines[5:]) + b"\n" + b'{"data": {"id": "cut'  # rotation cut the last line
    write_warc(coll / "s1.warc.gz", [(STREAM, "2023-03-05T00:00:00Z", seg1), (STREAM, "2023-03-05T00:05:00Z", seg2)])
    status = run(export("twitter_filter_stream", "streamed", format="json_full"))
    assert status["status"] == "completed success"
    out = [orjson.loads(line) for line in (out_dir(run.config) / "exp1_001.jsonl").read_bytes().splitlines()]
    # json_full of v2 is twarc-flattened tweets (author and matching_rules inlined), with twarc's __twarc
    assert [{k: v for k, v in t.items() if k != "__twarc"} for t in out] == \
        [ensure_flattened(orjson.loads(line))[0] for line in lines]
    assert {t["__twarc"]["url"] for t in out} == {STREAM}
    assert [w["code"] for w in status["warnings"]] == [codes.STREAM_LINE_CUT]  # a cut tail: no failure
    run(export("twitter_filter_stream", "streamed", format="json", id="tab"))
    rows = read_rows(out_dir(run.config) / "tab_001.json")
    assert [r["id"] for r in rows] == [t["id"] for t in tweets]
    assert {r["matching_rules"] for r in rows} == {json.dumps([{"id": "1", "tag": "x"}])}  # as twarc-csv writes


@pytest.mark.parametrize("segments", [True, False], ids=["stream-segment", "plain-response"])
def test_a_last_segment_holding_only_a_cut_line_is_a_cut_not_an_unreadable_item(run, data_root, segments):
    """A stop just after a rotation: the stream's last segment is the part of a line read, alone (found by the
    stream fidelity property, tests/test_fidelity_streams.py). An ordinary answer that is not JSON stays an error."""
    tweets = [v2_tweet(300 + i, "1", "2023-03-01T10:00:00.000Z") for i in range(3)]
    lines = [orjson.dumps({"data": t, "includes": {"users": [{"id": "1", "username": "u"}]}}) for t in tweets]
    write_warc(data_root / "collections" / "s" / "cutonly" / "s1.warc.gz",
               [(STREAM, "2023-03-05T00:00:00Z", b"\r\n".join(lines) + b"\r\n"),
                (STREAM, "2023-03-05T00:05:00Z", b'{"data": {"id": "cut')], segments=segments)
    status = run(export("twitter_filter_stream", "cutonly"))
    if not segments:
        assert status["status"] == "completed failure" and status["errors"][0]["code"] == codes.ITEM_UNREADABLE
        return
    assert status["status"] == "completed success", status
    assert [w["code"] for w in status["warnings"]] == [codes.STREAM_LINE_CUT]
    assert [r["id"] for r in read_rows(out_dir(run.config) / "exp1_001.csv")] == [t["id"] for t in tweets]


# ---------- the job contract ----------

@pytest.mark.parametrize("which", ["both", "neither"])
def test_exactly_one_of_seeds_or_collection(run, which):
    body = export("flickr_user", "1" if which == "both" else None)
    if which == "both":
        body["seeds"] = [{"id": "s", "uid": "u"}]
    status = run(body)
    assert status["status"] == "completed failure"
    assert [e["code"] for e in status["errors"]] == [codes.BAD_REQUEST]


def test_statuses_running_then_completed_on_the_status_key(run, collections):
    run(export("flickr_user", "1"))
    keys = {k for k, _ in run.published}
    assert keys == {"export.status.flickr.flickr_user"}
    statuses = [b["status"] for _, b in run.published]
    assert statuses[0] == "running" and statuses[-1] == "completed success"
    assert all(b["id"] == "exp1" and b["service"] == "Test Exporter" for _, b in run.published)
    assert "progress" in run.published[0][1]


def test_registry_covers_the_issue_types():
    wanted = {"twitter_search", "twitter_filter", "twitter_sample", "twitter_user_timeline", "twitter_search_2",
              "twitter_academic_search", "twitter_user_timeline_2", "twitter_filter_stream", "flickr_user",
              "tumblr_blog_posts", "weibo_timeline", "weibo_search"}
    assert wanted <= set(registry.export_types())
    assert registry.start_routing_key("flickr_user") == "export.start.flickr.flickr_user"
    assert registry.lookup("twitter_filter_stream").primary_table == "twitter_v2"
    assert registry.lookup("twitter_sample").primary_table == "twitter_v1"
    with pytest.raises(registry.UnknownExportType):
        registry.lookup("myspace_friends")


@pytest.mark.parametrize("shutdown", [False, True])
def test_interrupted_export_leaves_no_files(run, collections, shutdown):
    stop, down = threading.Event(), threading.Event()

    def publish(key, body):
        run.publish(key, body)
        if body["status"] == "running":  # stop as soon as the export has begun
            stop.set()
            if shutdown:
                down.set()

    ctx = JobContext(config=run.config, publish=publish, service="Test Exporter", stop=stop, shutdown=down)
    if shutdown:
        with pytest.raises(JobInterrupted):
            run(export("twitter_search", "twitter"), ctx=ctx)
        assert run.published[-1][1]["status"] == "running"  # no final status: the message is redelivered
    else:
        status = run(export("twitter_search", "twitter"), ctx=ctx)
        assert status["status"] == "completed failure"
    assert list(out_dir(run.config).iterdir()) == []
