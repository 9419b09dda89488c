"""swath's Twitter exports against SFM 3.0's, cell for cell.

The expected tables are made here the way SFM 3.0's exporters make them (gwu-libraries/sfm-twitter-harvester
3.0.0 `twitter_rest_exporter.py`, `twitter_stream_exporter.py`, their WARC iterators, and sfm-utils 3.0
`exporter.py`/`warc_iter.py`), by the same peer libraries SFM calls, on the same WARCs:
- v1.1: SFM's WARC iterators pick the responses by URL and the tweets out of them, and its table writes
  `twarc.json2csv.get_row(tweet, excel=True)` under `get_headings()` with petl's `tocsv` (the csv module);
- v2: the iterators flatten each page with twarc's `ensure_flattened`, and the table is twarc-csv's
  `DataFrameConverter(allow_duplicates=True).process(tweets)` written with pandas' `to_csv`. SFM pins
  twarc-csv 0.7.1, whose converter differs from 0.7.2's (installed here) only by 0.7.2's added column
  `public_metrics.bookmark_count`: SFM's columns are 0.7.2's without it.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.generated import generate_tweets
from tests.test_export import collections, export, out_dir, run, warcio_bodies  # noqa: F401 - fixtures

# SFM's URL rules (twitter_rest_warc_iter.py, twitter_stream_warc_iter.py)
V1_REST = ("https://api.twitter.com/1.1/search/tweets.json", "https://api.twitter.com/1.1/statuses/user_timeline.json")
V1_STREAM = "https://stream.twitter.com/1.1"
V2_REST = re.compile(r"https://api.twitter.com/2/(?:tweets/(?:search/(?:recent|all)|sample/stream)"
                     r"|users/[^/]+/(?:tweets|mentions))")
V2_STREAM = "https://api.twitter.com/2/tweets/search/stream"
BOOKMARKS = "public_metrics.bookmark_count"
pytestmark = pytest.mark.filterwarnings("ignore:DataFrame.applymap:FutureWarning")  # inside twarc-csv 0.7.2
TWARC_META = ("__twarc.retrieved_at", "__twarc.url", "__twarc.version")


def json_lines(body: bytes) -> list[Any]:
    """BaseWarcIter reads a payload line by line; a line that is not JSON is logged and skipped."""
    docs = []
    for line in body.split(b"\n"):
        if line.strip():
            try:
                docs.append(json.loads(line))
            except ValueError:
                pass
    return docs


def table(header: list[str], rows: list[list[Any]]) -> list[list[str]]:
    """Rows as petl's tocsv writes them (the csv module: None empty, anything else str()), read back."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    return list(csv.reader(io.StringIO(buf.getvalue())))


def v1_tweets(paths: list[Path]) -> list[dict[str, Any]]:
    """The tweets SFM's v1.1 REST and stream WARC iterators yield, in order."""
    tweets = []
    for url, _, body in warcio_bodies(paths):
        for doc in json_lines(body):
            if url.startswith(V1_REST):
                if isinstance(doc, dict) and ("error" in doc or "errors" in doc):
                    continue
                tweets += doc.get("statuses", []) if url.startswith(V1_REST[0]) else doc
            elif url.startswith(V1_STREAM) and "id_str" in doc:
                tweets.append(doc)
    return tweets


def sfm_v1(paths: list[Path]) -> list[list[str]]:
    from twarc import json2csv

    return table(json2csv.get_headings(), [json2csv.get_row(t, excel=True) for t in v1_tweets(paths)])


def sfm_v2(paths: list[Path]) -> tuple[list[list[str]], list[tuple[str, str]]]:
    """SFM's v2 table, and the (URL, WARC-Date) each row's tweet came from."""
    from dataframe_converter import DEFAULT_TWEET_COLUMNS, DataFrameConverter
    from twarc.expansions import ensure_flattened

    tweets, sources = [], []
    for url, date, body in warcio_bodies(paths):
        for doc in json_lines(body):
            if V2_REST.match(url) and isinstance(doc, dict) and "data" in doc:
                flat = ensure_flattened(doc)
            elif url.startswith(V2_STREAM):
                flat = [t for t in ensure_flattened(doc) if "text" in t]
            else:
                continue
            tweets += flat
            sources += [(url, date)] * len(flat)
    # twarc-csv 0.7.1 would drop a whole batch holding a column it does not know
    assert not any(BOOKMARKS.split(".")[1] in t.get("public_metrics", {}) for t in tweets)
    columns = [c for c in DEFAULT_TWEET_COLUMNS if c != BOOKMARKS]
    frame = DataFrameConverter(allow_duplicates=True).process(tweets)
    return list(csv.reader(io.StringIO(frame[columns].to_csv(index=False)))), sources


def swath_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(path.open(newline="", encoding="utf-8")))


def twitter_warcs(collections: Path) -> list[Path]:  # noqa: F811 - the fixture's value
    return sorted((collections / "twitter").rglob("*.warc.gz"), key=str)


# ---------- v1.1 ----------

def test_v1_table_is_sfms_cell_for_cell(run, collections):  # noqa: F811
    expected = sfm_v1(twitter_warcs(collections))
    status = run(export("twitter_search", "twitter"))
    assert status["status"] == "completed success", status
    got = swath_csv(out_dir(run.config) / "exp1_001.csv")
    assert got[0] == expected[0]  # 37 columns, SFM's order
    assert len(got) == len(expected) > 1500
    differing = [(n, h, want, have) for n, (w, g) in enumerate(zip(expected, got))
                 for h, want, have in zip(expected[0], w, g) if want != have]
    assert differing == []
    # the conventions the measurement found apart are in this data (so this test can fail on them)
    rows = [dict(zip(got[0], r)) for r in got[1:]]
    tweets = v1_tweets(twitter_warcs(collections))
    assert any("\n" in (t["user"]["description"] or "") for t in tweets)
    assert not any("\n" in r["text"] or "\n" in r["user_description"] for r in rows)
    both = {t["id_str"] for t in tweets if t.get("in_reply_to_status_id") and "quoted_status" in t}
    assert both and {r["tweet_type"] for r in rows if r["id"] in both} == {"reply"}


# ---------- v2 ----------

def _compare_v2(expected: list[list[str]], sources: list[tuple[str, str]], got: list[list[str]]) -> None:
    assert got[0] == expected[0] + [BOOKMARKS]  # SFM's 83 columns where SFM has them, swath's extra after
    assert len(got) == len(expected) == len(sources) + 1
    for want, have, (url, date) in zip(expected[1:], got[1:], sources):
        have_by_name = dict(zip(got[0], have))
        for name, value in zip(expected[0], want):
            if name in TWARC_META:  # SFM's WARCs hold no __twarc; swath says where and when it fetched
                assert value == ""
            else:
                assert (name, have_by_name[name]) == (name, value)
        assert have_by_name["__twarc.url"] == url
        assert have_by_name["__twarc.retrieved_at"][:19] == date[:19]


def test_v2_table_is_sfms_cell_for_cell(run, collections):  # noqa: F811
    expected, sources = sfm_v2(twitter_warcs(collections))
    status = run(export("twitter_search_2", "twitter"))
    assert status["status"] == "completed success", status
    _compare_v2(expected, sources, swath_csv(out_dir(run.config) / "exp1_001.csv"))
    assert len(expected) > 10


@pytest.fixture
def generated(data_root: Path) -> list[Path]:
    """Pages from the benchmark's generator: retweets, quotes, replies, mentions, unicode, line breaks."""
    target = data_root / "collections" / "gen" / "g"
    generate_tweets(target, tweets=400, warc_pages=2)
    return sorted(target.glob("*.warc.gz"), key=str)


def test_v2_generated_tweets_match_sfm_cell_for_cell(run, generated):  # noqa: F811
    expected, sources = sfm_v2(generated)
    status = run(export("twitter_search_2", "g"))
    assert status["status"] == "completed success", status
    got = swath_csv(out_dir(run.config) / "exp1_001.csv")
    _compare_v2(expected, sources, got)
    rows = [dict(zip(got[0], r)) for r in got[1:]]
    assert any(r["referenced_tweets.retweeted.id"] for r in rows)
    assert any("\\n" in r["author.description"] for r in rows)  # the LF escaped, as twarc-csv does


# ---------- json_full of v2: flattened tweets that twarc2 csv reads fully ----------

def twarc2_csv(jsonl: Path, out: Path) -> list[list[str]]:
    """The peer tool itself: `twarc2 csv` (twarc-csv's plugin) as SFM's converter is configured."""
    twarc2 = Path(sys.executable).with_name("twarc2")
    env = {**os.environ, "BEARER_TOKEN": "unused", "HOME": str(out.parent)}  # csv never calls the API
    args = ["csv", "--no-inline-referenced-tweets", "--allow-duplicates", "--hide-progress", str(jsonl), str(out)]
    done = subprocess.run([str(twarc2), *args], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return swath_csv(out)


@pytest.mark.parametrize("collection", ["twitter", "g"])
def test_v2_json_full_gives_twarc2_csv_swaths_own_table(run, collections, generated, collection):  # noqa: F811
    run(export("twitter_search_2", collection, format="json_full", id="full"))
    run(export("twitter_search_2", collection, format="csv", id="tab"))
    jsonl = out_dir(run.config) / "full_001.jsonl"
    theirs = twarc2_csv(jsonl, out_dir(run.config).parent / "twarc2.csv")
    ours = swath_csv(out_dir(run.config) / "tab_001.csv")
    assert sorted(theirs[0]) == sorted(ours[0]) and len(theirs) == len(ours) > 1
    theirs_rows = [dict(zip(theirs[0], r)) for r in theirs[1:]]
    ours_rows = [dict(zip(ours[0], r)) for r in ours[1:]]
    assert theirs_rows == ours_rows
    authored = [r for r in ours_rows if r["author_id"]]
    assert authored and all(r["author.username"] and r["author.id"] == r["author_id"] for r in authored)
    first = json.loads(jsonl.read_text(encoding="utf-8").splitlines()[0])
    assert first["author"]["id"] == first["author_id"] and "data" not in first  # a flattened tweet per line


# ---------- seed exports: a seed without a uid ----------

def test_seed_without_uid_selects_as_sfm_does(run, collections):  # noqa: F811
    """SFM's exporter keeps an item when its author's id is among the seeds' uids, so a seed whose uid is
    null (or "", what SFM's UI stores for a search seed) adds nothing; swath refused null outright."""
    tweets = v1_tweets(twitter_warcs(collections))
    uid = tweets[0]["user"]["id_str"]
    wanted = [t["id_str"] for t in tweets if t["user"]["id_str"] == uid]
    for n, seeds in enumerate(([{"id": "a", "uid": uid}, {"id": "b", "uid": None}],
                               [{"id": "a", "uid": uid}, {"id": "b", "uid": ""}])):
        body = export("twitter_search", format="dehydrate", id=f"s{n}", seeds=seeds)
        status = run(body)
        assert status["status"] == "completed success", status
        assert (out_dir(run.config) / f"s{n}_001.txt").read_text().split() == wanted


def test_v2_json_full_of_malformed_includes_writes_every_tweet(run, data_root):  # noqa: F811
    from tests.test_export_behaviour import SEARCH, write_warc

    good = {"id": "1", "text": "a", "author_id": "7", "created_at": "2023-01-01T00:00:00.000Z"}
    odd = {"id": "2", "text": "b", "author_id": ["7"], "created_at": "2023-01-01T00:00:00.000Z"}  # id not text
    page = {"data": [good, odd], "includes": {"users": [{"id": "7", "username": "u7"}, "not a user"],
                                              "tweets": [{"id": ["x"]}]}}
    write_warc(data_root / "collections" / "s" / "odd" / "odd.warc.gz",
               [(SEARCH, "2023-02-01T00:00:00Z", json.dumps(page).encode())])
    status = run(export("twitter_search_2", "odd", format="json_full"))
    assert status["status"] == "completed success", status
    lines = [json.loads(line) for line in (out_dir(run.config) / "exp1_001.jsonl").read_text().splitlines()]
    assert [t["id"] for t in lines] == ["1", "2"]
    assert lines[0]["author"] == {"id": "7", "username": "u7"}  # well-formed includes still inlined
    assert lines[1] == odd  # the tweet flatten cannot expand, as the API sent it
