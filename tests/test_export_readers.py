"""How exports read WARCs: worker processes write what one process writes, nothing is configured at import,
and the WARC reader agrees with warcio, skipping a corrupt gzip member but keeping what follows."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from swath.messages import codes
from tests.generated import generate_tweets
from tests.test_export import (  # noqa: F401 - fixtures
    collections,
    expected_items,
    export,
    out_dir,
    read_rows,
    run,
    warcio_bodies,
    warcs_of,
)

# ---------- worker processes ----------

def test_worker_processes_write_what_one_process_writes(run, data_root):
    """The parallel path (worker processes reading records by offset) gives byte-identical files."""
    info = generate_tweets(data_root / "collections" / "s" / "gen", tweets=3000, warc_pages=7)
    assert info["warcs"] > 2
    for dedupe in (False, True):
        for workers in (1, 2):
            run(export("twitter_search_2", "gen", id=f"w{workers}{dedupe}", dedupe=dedupe, segment_size=1000),
                workers=workers)
        one = sorted(out_dir(run.config).glob(f"w1{dedupe}_*.csv"))
        two = sorted(out_dir(run.config).glob(f"w2{dedupe}_*.csv"))
        assert [p.name.replace("w1", "") for p in one] == [p.name.replace("w2", "") for p in two]
        assert [p.read_bytes() for p in one] == [p.read_bytes() for p in two]
        rows = sum(len(read_rows(p)) for p in one)
        assert rows == (info["unique"] if dedupe else info["items_in_warcs"])


def test_importing_the_readers_configures_no_process():
    """The fork server is configured by whoever starts it (start_processes, a pool), not by an import."""
    code = ("import multiprocessing.forkserver as fs\n"
            "before = list(fs._forkserver._preload_modules)\n"
            "import swath.exporters.base, swath.exporters.reader\n"
            "print(before == fs._forkserver._preload_modules, fs._forkserver._forkserver_pid)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "None"]


# ---------- the WARC reader itself ----------

def test_reader_payloads_equal_warcio_on_every_fixture(fixtures_dir):
    """Chunked, gzip-encoded, cut-off streams: the decoded bodies are warcio's, byte for byte."""
    from swath.exporters.warc_reader import iter_responses

    paths = sorted((fixtures_dir / "sfm-warcs").rglob("*.warc.gz"))
    assert len(paths) >= 10
    for path in paths:
        problems: list[str] = []
        ours = [(r.url, r.body)
                for r in iter_responses(path, on_truncated=lambda w, m, problems=problems: problems.append(m))]
        assert ours == [(url, body) for url, _, body in warcio_bodies([path])]
        assert problems == []


def test_corrupt_member_is_skipped_and_later_records_kept(run, collections):
    from warcio.archiveiterator import ArchiveIterator

    paths = warcs_of(collections, "twitter")
    big = next(p for p in paths if p.name.startswith("test_1-20151202190229530"))
    # Record offsets and lengths per warcio, then damage bytes inside one response's gzip member.
    members = []
    with open(big, "rb") as fh:
        it = ArchiveIterator(fh)
        for rec in it:
            body = rec.content_stream().read() if rec.rec_type == "response" else None
            members.append((it.get_record_offset(), it.get_record_length(), body))
    victim = [m for m in members if m[2] is not None][5]
    data = bytearray(big.read_bytes())
    for i in range(victim[0] + 100, victim[0] + 140):
        data[i] ^= 0x55
    big.write_bytes(bytes(data))
    status = run(export("twitter_search", "twitter", format="dehydrate"))
    assert status["status"] == "completed success"
    assert [w for w in status["warnings"] if w["code"] == codes.WARC_TRUNCATED and big.name in w["message"]]
    got = (out_dir(run.config) / "exp1_001.txt").read_text().split()
    lost = {t["id_str"] for t in json.loads(victim[2])["statuses"]}
    kept_here = [t["id_str"] for m in members if m[2] is not None and m is not victim
                 for t in json.loads(m[2])["statuses"]]
    assert lost.isdisjoint(got) and set(kept_here) <= set(got)
    others = [t["id_str"] for t in expected_items([p for p in paths if p != big], "twitter_v1")]
    assert len(got) == len(kept_here) + len(others)


def test_export_workers_setting():
    from swath.core.config import Config

    assert Config.from_env({}).export_workers == 0  # by input size
    assert Config.from_env({"SWATH_EXPORT_WORKERS": "3"}).export_workers == 3
    assert Config.from_env({"SWATH_EXPORT_WORKERS": "-2"}).export_workers == 0
    with pytest.raises(SystemExit, match="SWATH_EXPORT_WORKERS must be an integer"):
        Config.from_env({"SWATH_EXPORT_WORKERS": "many"})


def test_readers_only_on_free_cpus(monkeypatch):
    # issue 35: with the other core busy, 2 readers ran slower than one process; the count follows the CPUs
    # idle now, and one process (no pool) whenever fewer than 2 are free
    from swath.exporters import reader

    big = 64 << 20
    cpus = len(os.sched_getaffinity(0))
    monkeypatch.setattr(reader, "idle_cpus", lambda allowed, **kw: 0.1)
    assert reader.free_cpus() == 0
    assert reader.default_workers(big) == 1
    monkeypatch.setattr(reader, "idle_cpus", lambda allowed, **kw: 1.2)
    assert reader.default_workers(big) == 1  # one free CPU: the writing process needs it
    monkeypatch.setattr(reader, "idle_cpus", lambda allowed, **kw: float(len(allowed)))
    assert reader.free_cpus() == cpus
    assert reader.default_workers(big) == (min(cpus, 8) if cpus >= 2 else 1)
    assert reader.default_workers(1 << 20) == 1  # small inputs stay in-process whatever is free
    # no /proc/stat: the load average decides, as before
    monkeypatch.setattr(reader, "idle_cpus", lambda allowed, **kw: None)
    monkeypatch.setattr(os, "getloadavg", lambda: (float(cpus), 0.0, 0.0))
    assert reader.free_cpus() == 0
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert reader.free_cpus() == cpus


def test_idle_cpus_are_read_from_two_proc_stat_texts():
    from swath.exporters.cpus import idle_between, idle_cpus

    before = "cpu  300 0 100 1000 0 0 0 0 0 0\ncpu0 100 0 50 500 0 0 0 0 0 0\ncpu1 200 0 50 500 0 0 0 0 0 0\nintr 1\n"
    # cpu0 idle the whole 100 ticks; cpu1 busy 75 of 100 (iowait counts as idle)
    after = "cpu  0\ncpu0 100 0 50 600 0 0 0 0 0 0\ncpu1 260 0 65 520 5 0 0 0 0 0\n"
    assert idle_between(before, after, {0, 1}) == 1.0 + 0.25
    assert idle_between(before, after, {1}) == 0.25  # only the CPUs this process may run on
    assert idle_between(before, after, {7}) is None and idle_between(before, before, {0}) is None
    measured = idle_cpus(os.sched_getaffinity(0), sample=0.05)  # the real file: a number of CPUs, or less
    assert measured is not None and 0.0 <= measured <= len(os.sched_getaffinity(0)) + 0.01
