"""`swath wacz` (issue #17 item 8): a collection packaged as WACZ with the `wacz` package, read back with that
tool (`wacz validate`) and, in the slow variant, replayed by pywb from the package's own index."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator

from swath.core.errors import SwathError
from swath.exporters.wacz import collection_warcs, package
from swath.harvesters.run import run_harvest
from swath.messages import codes
from tests.backendkit import harvest as backend_harvest
from tests.enginekit import PagedApi, context, routing_key, start_message
from tests.fakes.httpserver import FakeServer
from tests.fakes.oai import SickleEndpoint
from tests.test_planted_links import _opened_within

VENV_BIN = Path(sys.executable).parent
ROOT = Path(__file__).resolve().parent.parent


def _collection(config, data_root: Path, fixtures_dir: Path) -> tuple[Path, dict[str, list[Path]]]:
    """One collection folder holding a paged API harvest and an OAI-PMH harvest: its path and WARCs by harvest."""
    with FakeServer() as server:
        PagedApi(server, pages=3)
        ctx, published = context(config)
        run_harvest(start_message(server.url + "/pages", harvest_id="pages-1", path="coll"),
                    routing_key=routing_key("generic_pages"), ctx=ctx)
    assert published.kinds()[-1] == "completed success"
    with SickleEndpoint(fixtures_dir).server as server:
        oai = backend_harvest(config, "oai_pmh", f"{server.url}/oai", path="coll")
    by_harvest = {"pages-1": [Path(w["warc"]["path"]) for w in published.warcs],
                  oai.final["id"]: oai.warcs}
    return data_root / "coll", by_harvest


def _swath_wacz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(VENV_BIN / "swath"), "wacz", *args], capture_output=True, text=True, timeout=600)


def _captures(warcs: list[Path]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(url, WARC-Date) of the 2xx HTTP responses (the pages), and of every response/resource record (the
    index), read with warcio."""
    pages, indexed = [], []
    for path in warcs:
        with open(path, "rb") as fh:
            for rec in ArchiveIterator(fh):
                key = (rec.rec_headers.get_header("WARC-Target-URI"), rec.rec_headers.get_header("WARC-Date"))
                if rec.rec_type in ("response", "resource"):
                    indexed.append(key)
                if rec.rec_type == "response" and rec.http_headers.get_statuscode().startswith("2"):
                    pages.append(key)
    return pages, indexed


def test_collection_packaged_as_wacz_validates_and_holds_warcs_index_and_pages(config, data_root, fixtures_dir,
                                                                               tmp_path):
    path, by_harvest = _collection(config, data_root, fixtures_dir)
    warcs = sorted((w for ws in by_harvest.values() for w in ws), key=str)
    out = tmp_path / "coll.wacz"
    done = _swath_wacz(str(path), "-o", str(out), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    pages, indexed = _captures(warcs)
    assert report == {"path": str(out), "warcs": len(warcs), "pages": len(pages), "skipped_outside": []}

    # the field's own tool reads it back and finds it valid (hashes, datapackage, required contents)
    check = subprocess.run([str(VENV_BIN / "wacz"), "validate", "-f", str(out)], capture_output=True, text=True,
                           timeout=600)
    assert check.returncode == 0 and "Validation succeeded" in check.stdout, check.stdout + check.stderr

    with zipfile.ZipFile(out) as wacz:
        names = set(wacz.namelist())
        assert {f"archive/{w.name}" for w in warcs} <= names
        assert all(wacz.read(f"archive/{w.name}") == w.read_bytes() for w in warcs)  # the WARCs as written
        index = gzip.decompress(wacz.read("indexes/index.cdx.gz")).decode().splitlines()
        lines = [json.loads(line.split(" ", 2)[2]) for line in index]
        page_lines = wacz.read("pages/pages.jsonl").decode().splitlines()
        datapackage = json.loads(wacz.read("datapackage.json"))
    # every response and resource record is in the index (requests too, for POST replay), each once
    assert sorted((f["url"], f["filename"]) for f in lines if f.get("mime") != "warc/request") == sorted(
        (url, w.name) for w in warcs for url, _ in _captures([w])[1])
    assert len(lines) >= len(indexed)
    # the pages: one per 2xx HTTP capture, by URL and time
    header, *entries = (json.loads(line) for line in page_lines)
    assert header["format"] == "json-pages-1.0"
    assert sorted((e["url"], e["ts"]) for e in entries) == sorted(pages)
    assert datapackage["title"] == "coll"


def test_harvest_option_packages_only_that_harvest(config, data_root, fixtures_dir, tmp_path):
    path, by_harvest = _collection(config, data_root, fixtures_dir)
    out = tmp_path / "pages.wacz"
    done = _swath_wacz(str(path), "-o", str(out), "--harvest", "pages-1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["warcs"] == len(by_harvest["pages-1"])
    with zipfile.ZipFile(out) as wacz:
        assert {n for n in wacz.namelist() if n.startswith("archive/")} == {
            f"archive/{w.name}" for w in by_harvest["pages-1"]}


def test_a_harvest_id_that_begins_another_harvests_id_takes_only_its_own_warcs(tmp_path):
    # `run-1`'s WARCs start with "run-1-", and so do those of `run-1-b`: the name's whole pattern decides
    names = {"run-1": "run-1-20261127T093000Z-00001.warc.gz", "run-1-b": "run-1-b-20261127T093000Z-00001.warc.gz"}
    folder = tmp_path / "coll" / "2026" / "11" / "27" / "09"
    folder.mkdir(parents=True)
    for name in names.values():
        (folder / name).write_bytes(b"")
    for harvest_id, name in names.items():
        assert collection_warcs(tmp_path / "coll", harvest_ids=[harvest_id]).warcs == [folder / name]


def test_a_fifo_named_like_a_warc_is_not_packaged_nor_waited_on(tmp_path):
    # a FIFO opens only once something writes to it: `swath wacz` waited for ever on one planted in the folder
    folder = tmp_path / "coll" / "2026" / "11" / "27" / "09"
    folder.mkdir(parents=True)
    os.mkfifo(folder / "planted-20261127T093000Z-00001.warc.gz")
    assert collection_warcs(tmp_path / "coll").warcs == []
    raised = _opened_within(lambda: package([folder / "planted-20261127T093000Z-00001.warc.gz"], tmp_path / "x.wacz",
                                            title="t"), folder / "planted-20261127T093000Z-00001.warc.gz")
    assert isinstance(raised, SwathError) and raised.code == codes.WACZ_FAILED and "regular file" in raised.message
    assert not (tmp_path / "x.wacz").exists()


def test_nothing_to_package_is_an_error_saying_what_to_check(tmp_path):
    (tmp_path / "empty").mkdir()
    done = _swath_wacz(str(tmp_path / "empty"), "-o", str(tmp_path / "x.wacz"))
    assert done.returncode == 1
    assert f"error [{codes.WACZ_FAILED}]" in done.stderr and "collection path" in done.stderr
    assert not (tmp_path / "x.wacz").exists()


PYWB_VENV = Path(os.environ.get("SWATH_PYWB_VENV", ROOT / ".venv-pywb"))


@pytest.mark.slow
def test_pywb_replays_the_wacz_from_its_own_index(config, data_root, fixtures_dir, tmp_path):
    path, by_harvest = _collection(config, data_root, fixtures_dir)
    out = tmp_path / "coll.wacz"
    assert _swath_wacz(str(path), "-o", str(out)).returncode == 0
    done = subprocess.run(["bash", str(ROOT / "dev" / "pywb-replay"), str(tmp_path / "pywb"), str(out)],
                          capture_output=True, text=True, env={**os.environ, "SWATH_PYWB_VENV": str(PYWB_VENV)},
                          timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    report = json.loads(done.stdout.splitlines()[-1])
    pages, _ = _captures([w for ws in by_harvest.values() for w in ws])
    assert report["mismatched"] == [] and report["replayed"] >= len(pages) > 0
