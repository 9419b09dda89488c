"""Exports reading WARCs kept in object storage (warc_created's path `s3://bucket/prefix/<key>`) by ranged GETs
(core/warc_files.py, core/objects_ranged.py) on the real SeaweedFS: the cost follows the selection (a WARC not
selected is never fetched, counted per object) and the output is byte-equal to the same export of the same WARCs
on the local filesystem."""

from __future__ import annotations

import dataclasses
import io
import json
import random
import zipfile
from pathlib import Path
from typing import Any

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from swath.core import objects_ranged
from swath.core.objects import storage_target, store_for
from swath.core.objects_ranged import RangedFile
from swath.core.warc_files import PathOutsideStore, key_in, use_storage
from swath.export_index import StoreIndex
from swath.exporters.warc_reader import read_at, scan_refs
from swath.harvesters.retry import RetryPolicy
from swath.messages import codes
from swath.monitor import record
from swath.store import Store
from tests.generated import bench_module

gen = bench_module("gen_archive")
QUICK = RetryPolicy(retries=1, backoff=0.01)
SEARCH = "export.start.twitter.twitter_search_2"


def export(config, body: dict[str, Any], index: Any, name: str) -> tuple[dict[str, Any], list[bytes]]:
    """The exporter workers' job on `index`, readers in this process: its final status and its files' bytes."""
    from swath.core.jobs import JobContext
    from swath.exporters.base import run_export

    statuses: list[dict[str, Any]] = []
    ctx = JobContext(config=config, publish=lambda key, status: statuses.append(status), service="test")
    run_export({"id": name, "type": "twitter_search_2", "path": f"exports/{name}", **body}, routing_key=SEARCH,
               ctx=ctx, index=index, workers=1)
    files = sorted((config.data_root / "exports" / name).iterdir())
    return statuses[-1], [f.read_bytes() for f in files]


def _archive(config, *, warcs: int = 30) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    manifest = gen.generate(out=config.data_root, warcs=warcs, per_collection=10, seed_warcs=4, seed_items=40,
                            other_items=3)
    return manifest["warcs"], manifest["messages"]


def test_a_seed_export_from_s3_fetches_only_its_warcs_and_writes_what_the_local_export_writes(
        s3_config, tmp_path) -> None:
    entries, messages = _archive(s3_config)
    primary = store_for(s3_config, retry=QUICK)
    local_db = Store(url=f"sqlite:///{tmp_path / 'local.sqlite'}")
    s3_db = Store(url=f"sqlite:///{tmp_path / 's3.sqlite'}")
    urls = {}
    for entry, body in zip(entries, messages, strict=True):
        key = str(Path(entry["path"]).relative_to(s3_config.data_root))
        info = primary.put_file(key, Path(entry["path"]))
        urls[entry["path"]] = info.url
        record(local_db, "warc_created", body, data_root=s3_config.data_root)
        # as an S3 harvest announces it: the object's URL, the same size and SHA-1
        record(s3_db, "warc_created", {**body, "warc": {**body["warc"], "path": info.url}},
               data_root=s3_config.data_root)
    body = {"seeds": [{"id": "seed-1", "uid": "1001"}], "format": "csv"}
    local, local_files = export(s3_config, body, StoreIndex(store=local_db, data_root=s3_config.data_root), "local")
    objects_ranged.FETCHED.clear()
    index = StoreIndex(store=s3_db, data_root=s3_config.data_root, objects=storage_target(s3_config))
    remote, remote_files = export(s3_config, body, index, "remote")
    assert local["status"] == remote["status"] == "completed success", (local, remote)
    assert remote["items"] == local["items"] == sum(e["items"] for e in entries if e["seed"] == "seed-1") > 0
    assert remote_files == local_files  # byte-equal
    selected = {urls[e["path"]] for e in entries if e["seed"] == "seed-1"}
    assert set(objects_ranged.FETCHED) == selected  # every selected WARC read, no other ever fetched
    sizes = {urls[e["path"]]: Path(e["path"]).stat().st_size for e in entries}
    # the scan streams each selected WARC once, the record reads fetch its records' blocks once more
    assert all(sizes[url] <= objects_ranged.FETCHED[url] <= 2 * sizes[url] for url in selected)
    local_db.close()
    s3_db.close()


def test_reader_processes_read_s3_warcs_with_the_store_handed_to_them(s3_config, tmp_path) -> None:
    """With a pool of reader processes the store's settings reach them in memory (their initializer): the same
    files as the in-process export."""
    from swath.core.jobs import JobContext
    from swath.exporters.base import run_export

    entries, messages = _archive(s3_config, warcs=12)
    primary = store_for(s3_config, retry=QUICK)
    db = Store(url=f"sqlite:///{tmp_path / 's3.sqlite'}")
    for entry, body in zip(entries, messages, strict=True):
        info = primary.put_file(str(Path(entry["path"]).relative_to(s3_config.data_root)), Path(entry["path"]))
        record(db, "warc_created", {**body, "warc": {**body["warc"], "path": info.url}}, data_root=s3_config.data_root)
    index = StoreIndex(store=db, data_root=s3_config.data_root, objects=storage_target(s3_config))
    outputs = []
    for workers in (1, 2):
        statuses: list[dict[str, Any]] = []
        ctx = JobContext(config=s3_config, publish=lambda key, status, into=statuses: into.append(status),
                         service="test")
        name = f"w{workers}"
        run_export({"id": name, "type": "twitter_search_2", "path": f"exports/{name}", "format": "csv",
                    "collection": {"id": "c0000"}}, routing_key=SEARCH, ctx=ctx,
                   index=index, workers=workers)
        assert statuses[-1]["status"] == "completed success", statuses[-1]
        outputs.append([f.read_bytes() for f in sorted((s3_config.data_root / "exports" / name).iterdir())])
    assert outputs[0] == outputs[1] and outputs[0]
    db.close()


def test_read_at_fetches_the_blocks_of_the_record_only(s3_config, tmp_path) -> None:
    """A WARC of many records: reading one by its offset fetches the block(s) it lies in, not the file."""
    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=True)
    for n in range(200):
        payload = (b'{"n": %d, "pad": "' % n) + random.Random(n).randbytes(6000).hex().encode() + b'"}'
        http = StatusAndHeaders("200 OK", [("Content-Type", "application/json")], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(f"https://example.org/{n}", "response",
                                                      payload=io.BytesIO(payload), http_headers=http))
    data = buffer.getvalue()
    path = tmp_path / "many.warc.gz"
    path.write_bytes(data)
    primary = store_for(s3_config, retry=QUICK)
    info = primary.put_file("set/c/many.warc.gz", path)
    use_storage(s3_config, retry=QUICK)
    local_refs = scan_refs(path, on_truncated=lambda *a: None)
    remote_refs = scan_refs(info.url, on_truncated=lambda *a: None)
    assert [(r.offset, r.date) for r in remote_refs] == [(r.offset, r.date) for r in local_refs]
    assert len(local_refs) == 200
    block = 16 * 1024
    assert len(data) > 20 * block
    with RangedFile(store=primary, key=info.key, size=info.size, block_size=block) as fh, open(path, "rb") as local:
        ref = dataclasses.replace(remote_refs[150], warc=info.url)
        got = read_at(fh, ref, on_truncated=lambda *a: None)
        want = read_at(local, dataclasses.replace(local_refs[150]), on_truncated=lambda *a: None)
        assert got is not None and want is not None and got.body == want.body and got.url == want.url
        record_end = remote_refs[151].offset
        blocks = (record_end - 1) // block - ref.offset // block + 1
        read_ahead = 64 * 1024  # FastWARC reads its stream in 64 KiB pieces: one piece past the record at most
        assert fh.fetched <= blocks * block + read_ahead + block < len(data) // 4


def test_an_s3_path_outside_the_configured_store_is_refused(s3_config) -> None:
    target = storage_target(s3_config)
    assert key_in(target, f"s3://{target.bucket}/{target.prefix}/set/c/a.warc.gz") == "set/c/a.warc.gz"
    for url in (f"s3://other-bucket/{target.prefix}/a.warc.gz", f"s3://{target.bucket}/elsewhere/a.warc.gz",
                f"s3://{target.bucket}/{target.prefix}/../x/a.warc.gz", f"s3://{target.bucket}/{target.prefix}/"):
        with pytest.raises(PathOutsideStore) as caught:
            key_in(target, url)
        assert caught.value.code == codes.PATH_OUTSIDE_STORE


def test_the_index_warns_of_an_s3_warc_in_another_store(s3_config, tmp_path) -> None:
    entries, messages = _archive(s3_config, warcs=2)
    db = Store(url=f"sqlite:///{tmp_path / 's3.sqlite'}")
    for body in messages:
        elsewhere = {**body["warc"], "path": "s3://somebody-else/x/" + body["warc"]["id"]}
        record(db, "warc_created", {**body, "warc": elsewhere}, data_root=s3_config.data_root)
    index = StoreIndex(store=db, data_root=s3_config.data_root, objects=storage_target(s3_config))
    status, _ = export(s3_config, {"collection": {"id": "c0000"}, "format": "csv"}, index, "x")
    assert codes.PATH_OUTSIDE_STORE in [n["code"] for n in status["warnings"]]
    db.close()


def test_a_wacz_of_an_s3_collection_holds_what_the_local_one_holds(s3_config, tmp_path) -> None:
    """`swath wacz --collection ID` from the index: the collection's objects streamed once each, no other fetched;
    the package's WARCs and pages are those of the same collection packaged from its local folder."""
    from click.testing import CliRunner

    from swath.commands.wacz import command as wacz_cli

    entries, messages = _archive(s3_config, warcs=20)
    primary = store_for(s3_config, retry=QUICK)
    db = Store(url=s3_config.db_url)
    urls = {}
    for entry, body in zip(entries, messages, strict=True):
        info = primary.put_file(str(Path(entry["path"]).relative_to(s3_config.data_root)), Path(entry["path"]))
        urls[entry["path"]] = info.url
        record(db, "warc_created", {**body, "warc": {**body["warc"], "path": info.url}}, data_root=s3_config.data_root)
    db.close()
    objects_ranged.FETCHED.clear()
    remote = CliRunner().invoke(wacz_cli, ["--collection", "c0001", "-o", str(tmp_path / "s3.wacz")], obj=s3_config,
                                catch_exceptions=False)
    assert remote.exit_code == 0, remote.output
    local = CliRunner().invoke(wacz_cli, [str(s3_config.data_root / "collections" / "set1" / "c0001"), "-o",
                                          str(tmp_path / "local.wacz")], obj=s3_config, catch_exceptions=False)
    assert local.exit_code == 0, local.output
    mine = {urls[e["path"]]: Path(e["path"]).stat().st_size for e in entries if e["collection"] == "c0001"}
    assert dict(objects_ranged.FETCHED) == mine  # each of the collection's objects once, nothing else
    with zipfile.ZipFile(tmp_path / "s3.wacz") as got, zipfile.ZipFile(tmp_path / "local.wacz") as want:
        names = sorted(n for n in want.namelist() if n.startswith(("archive/", "pages/", "indexes/")))
        assert len([n for n in names if n.startswith("archive/")]) == len(mine)
        assert sorted(n for n in got.namelist() if n.startswith(("archive/", "pages/", "indexes/"))) == names
        for name in names:
            if name.endswith(".jsonl"):  # the tool gives each page a random id
                assert _pages(got.read(name)) == _pages(want.read(name)), name
            else:
                assert got.read(name) == want.read(name), name


def _pages(data: bytes) -> list[dict[str, Any]]:
    return [{k: v for k, v in json.loads(line).items() if k != "id"} for line in data.splitlines()]


def test_an_export_whose_store_does_not_answer_fails_with_storage_unavailable(s3_config, tmp_path) -> None:
    from tests.seaweed import free_ports

    entries, messages = _archive(s3_config, warcs=2)
    primary = store_for(s3_config, retry=QUICK)
    db = Store(url=f"sqlite:///{tmp_path / 's3.sqlite'}")
    for entry, body in zip(entries, messages, strict=True):
        info = primary.put_file(str(Path(entry["path"]).relative_to(s3_config.data_root)), Path(entry["path"]))
        record(db, "warc_created", {**body, "warc": {**body["warc"], "path": info.url}}, data_root=s3_config.data_root)
    away = dataclasses.replace(s3_config, storage_endpoint=f"http://127.0.0.1:{free_ports(1)[0]}", http_retries=1,
                               http_backoff=0.01)
    index = StoreIndex(store=db, data_root=away.data_root, objects=storage_target(away))
    status, _ = export(away, {"collection": {"id": "c0000"}, "format": "csv"}, index, "away")
    assert status["status"] == "completed failure"
    assert [e["code"] for e in status["errors"]] == [codes.STORAGE_UNAVAILABLE]
    assert away.storage_secret_access_key not in str(status)
    db.close()
