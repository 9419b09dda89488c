"""Exporters on SFM's own WARCs: expected ids and counts are read from the WARCs here with warcio."""

from __future__ import annotations

import csv
import dataclasses
import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from lxml import etree
from warcio.archiveiterator import ArchiveIterator

from swath.core.jobs import JobContext
from swath.exporters import registry
from swath.exporters.base import run_export
from swath.messages import codes

SFM = "sfm-warcs"
V1_MARKERS = ("/1.1/search/tweets.json", "/1.1/statuses/user_timeline.json", "/1.1/statuses/filter.json")
V2_MARKERS = ("/2/tweets/search/", "/2/users/")


# ---------- expected values, worked out with warcio (not with the code under test) ----------

def warcio_bodies(paths: list[Path]) -> list[tuple[str, str, bytes]]:
    out = []
    for path in paths:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                if rec.rec_type == "response":
                    out.append((rec.rec_headers.get_header("WARC-Target-URI"),
                                rec.rec_headers.get_header("WARC-Date"), rec.content_stream().read()))
    return out


def json_docs(body: bytes) -> list[Any]:
    try:
        return [json.loads(body)]
    except ValueError:
        docs = []
        for line in body.splitlines():
            try:
                docs.append(json.loads(line))
            except ValueError:
                pass
        return docs


def expected_items(paths: list[Path], kind: str) -> list[dict[str, Any]]:
    """Every item of `kind` the WARCs hold, in file order (duplicates kept)."""
    items = []
    for url, _, body in warcio_bodies(paths):
        for doc in json_docs(body):
            if kind == "twitter_v1" and any(m in url for m in V1_MARKERS):
                tweets = doc if isinstance(doc, list) else doc.get("statuses", [doc])
                items += [t for t in tweets if "id_str" in t and "user" in t]
            elif kind == "twitter_v2" and any(m in url for m in V2_MARKERS):
                data = doc.get("data", [])
                items += data if isinstance(data, list) else [data]
            elif kind == "flickr_photo" and "flickr.photos.getInfo" in url:
                items.append(doc["photo"])
            elif kind == "tumblr_post" and "/posts" in url:
                items += doc["response"]["posts"]
            elif kind == "weibo_post" and "api.weibo.com" in url:
                items += doc.get("statuses", [])
    return items


def item_id(kind: str, item: dict[str, Any]) -> str:
    if kind == "twitter_v1":
        return item["id_str"]
    if kind == "weibo_post":
        return item["idstr"]
    return str(item["id"])


# ---------- running exports ----------

@pytest.fixture
def collections(data_root: Path, fixtures_dir: Path) -> Path:
    """SFM's layout: <data_root>/collections/<set>/<collection>/...; the fixture folders are collections."""
    target = data_root / "collections" / "set1"
    shutil.copytree(fixtures_dir / SFM, target)
    for name in ("flickr/1", "weibo/2", "weibo/3"):  # their own collection ids
        shutil.move(str(target / name), str(target / name.split("/")[1]))
    return target


def warcs_of(collections: Path, collection: str) -> list[Path]:
    return sorted(collections.joinpath(collection).rglob("*.warc.gz"), key=str)


class Run:
    def __init__(self, config) -> None:
        self.config = config
        self.published: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, body: dict[str, Any], *, ctx: JobContext | None = None, **extra) -> dict[str, Any]:
        ctx = ctx or JobContext(config=self.config, publish=self.publish, service="Test Exporter")
        key = registry.start_routing_key(body["type"]) if body.get("type") in registry.export_types() else \
            f"export.start.x.{body.get('type', 'x')}"
        run_export(body, routing_key=key, ctx=ctx, **extra)
        return self.published[-1][1]

    def publish(self, key: str, body: dict[str, Any]) -> None:
        self.published.append((key, body))


@pytest.fixture
def run(config) -> Run:
    return Run(dataclasses.replace(config, status_interval=0.0))


def export(type_: str, collection: str | None = None, **fields) -> dict[str, Any]:
    body: dict[str, Any] = {"id": fields.pop("id", "exp1"), "type": type_, "path": fields.pop("path", "exports/1"),
                            "format": fields.pop("format", "csv")}
    if collection is not None:
        body["collection"] = {"id": collection}
    body.update(fields)
    return body


def out_dir(config) -> Path:
    return config.data_root / "exports" / "1"


def read_rows(path: Path) -> list[dict[str, Any]]:
    if path.suffix == ".csv":
        return list(csv.DictReader(path.open(newline="", encoding="utf-8")))
    if path.suffix == ".tsv":
        return list(csv.DictReader(path.open(newline="", encoding="utf-8"), delimiter="\t"))
    if path.suffix == ".json":
        return [orjson.loads(line) for line in path.read_bytes().splitlines()]
    if path.suffix == ".xlsx":
        with zipfile.ZipFile(path) as zf:
            sheet = etree.fromstring(zf.read("xl/worksheets/sheet1.xml"))
        ns = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}
        rows = []
        for row in sheet.iterfind(".//m:row", ns):
            cells = {}
            for c in row.iterfind("m:c", ns):
                col = "".join(ch for ch in c.get("r") if ch.isalpha())
                cells[col] = "".join(c.itertext())
            rows.append(cells)
        header = rows[0]
        return [{header[k]: v for k, v in r.items()} for r in rows[1:]]
    raise AssertionError(path)


# ---------- round trips ----------

CASES = [
    ("twitter_search", "twitter", "twitter_v1", "id"),
    ("twitter_user_timeline_2", "twitter", "twitter_v2", "id"),
    ("flickr_user", "1", "flickr_photo", "photo_id"),
    ("tumblr_blog_posts", "tumblr", "tumblr_post", "tumblr_id"),
    ("weibo_timeline", "2", "weibo_post", "weibo_id"),
]  # SFM's weibo_search fixture holds only a 400 answer: test_export_empty.py exports it


@pytest.mark.parametrize("type_,collection,kind,id_col", CASES)
def test_round_trip_collection_ids_equal_the_warcs(run, collections, type_, collection, kind, id_col):
    expected = [item_id(kind, i) for i in expected_items(warcs_of(collections, collection), kind)]
    status = run(export(type_, collection))
    assert status["status"] == "completed success", status
    primary = out_dir(run.config) / "exp1_001.csv"
    assert [r[id_col] for r in read_rows(primary)] == expected
    assert status["items"] >= len(expected)


def test_collection_with_v1_and_v2_writes_one_table_per_version(run, collections):
    paths = warcs_of(collections, "twitter")
    v1 = [i["id_str"] for i in expected_items(paths, "twitter_v1")]
    v2 = [i["id"] for i in expected_items(paths, "twitter_v2")]
    assert v1 and v2
    status = run(export("twitter_search_2", "twitter", format="dehydrate"))
    d = out_dir(run.config)
    assert (d / "exp1_001.txt").read_text().split() == v2  # the type's own version: plain names
    assert (d / "exp1_twitter_v1_001.txt").read_text().split() == v1
    infos = [n for n in status["infos"] if n["code"] == codes.EXPORT_TABLES]
    assert any("twitter_v1" in n["message"] and "twitter_v2" in n["message"] for n in infos)


# ---------- every format ----------

@pytest.mark.parametrize("fmt", ["csv", "tsv", "xlsx", "json"])
def test_table_formats_hold_every_item(run, collections, fmt):
    expected = [item_id("flickr_photo", i) for i in expected_items(warcs_of(collections, "1"), "flickr_photo")]
    run(export("flickr_user", "1", format=fmt))
    rows = read_rows(out_dir(run.config) / f"exp1_001.{fmt}")
    assert [r["photo_id"] for r in rows] == expected
    owners = {i["owner"]["username"] for i in expected_items(warcs_of(collections, "1"), "flickr_photo")}
    assert {r["owner_username"] for r in rows} == owners


# Twitter v2's json_full is flattened tweets, as SFM's (tests/test_sfm_parity.py).
@pytest.mark.parametrize("type_,collection,kind", [(c[0], c[1], c[2]) for c in CASES[:5] if c[2] != "twitter_v2"])
def test_json_full_is_byte_exact(run, collections, type_, collection, kind):
    paths = warcs_of(collections, collection)
    bodies = [body for _, _, body in warcio_bodies(paths)]
    run(export(type_, collection, format="json_full"))
    lines = (out_dir(run.config) / "exp1_001.jsonl").read_bytes().splitlines()
    expected = expected_items(paths, kind)
    assert len(lines) == len(expected)
    for line, item in zip(lines, expected):
        assert orjson.loads(line) == item
        assert any(line in body for body in bodies)  # the API's own bytes, not a re-serialisation


def test_dehydrate_writes_ids(run, collections):
    expected = [i["idstr"] for i in expected_items(warcs_of(collections, "2"), "weibo_post")]
    run(export("weibo_timeline", "2", format="dehydrate"))
    assert (out_dir(run.config) / "exp1_001.txt").read_text().split() == expected


def test_unknown_format_fails_with_code(run, collections):
    status = run(export("flickr_user", "1", format="parquet"))
    assert status["status"] == "completed failure"
    assert [e["code"] for e in status["errors"]] == [codes.UNSUPPORTED_EXPORT_FORMAT]
    assert not out_dir(run.config).exists() or not any(out_dir(run.config).iterdir())
