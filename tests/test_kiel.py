"""The Kiel archive: record renewals, objects (200, 404, redirect chains, unchanged bodies), branches,
redists and the termination strategy — files on disk, all HTTP against a local server."""

from __future__ import annotations

import dataclasses
import itertools
import json
import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from swath.commands.kiel import command as kiel_command
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.messages.validation import InvalidMessage
from swath.platforms.kiel.declaration import PLATFORM
from swath.platforms.kiel.harvester import KielHarvester
from swath.platforms.kiel.objects import ObjectDir
from swath.platforms.kiel.redist import REDISTS, NestedRedist, RepecRedist, escape_name
from swath.platforms.kiel.termination import Termination
from tests.enginekit import context, read_records, warc_files
from tests.fakes.httpserver import FakeServer, Response

ROUTING_KEY = "harvest.start.kiel.kiel_archive"
TEXT_ID = "RePEc:aaa:wpaper:0001"
BRANCHES = """<branches>
  <branch xpath="displaypage"/>
  <branch xpath="file/url"/>
  <branch xpath="hasauthor/person/homepage"/>
</branches>
"""


def amf(base: str, *, title: str = "One", urls: tuple[str, ...] = ("/a.pdf", "/missing", "/r1", "/loop1"),
        indent: str = "    ") -> str:
    files = "".join(f"\n{indent}<file><url>{base}{u}</url></file>" for u in urls)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<amf xmlns="http://amf.openlib.org">\n'
            f'  <text id="{TEXT_ID}">\n{indent}<title>{title}</title>\n{indent}<displaypage>{base}/page'
            f'</displaypage>{files}\n  </text>\n  <person id="RePEc:per:1"><name>X</name></person>\n</amf>\n')


class Clock:
    """Whole seconds that advance on every reading, so each renewal gets its own tist."""

    def __init__(self, start: int = 1_700_000_000) -> None:
        self.ticks = itertools.count(start)
        self.now = start

    def __call__(self) -> float:
        self.now = next(self.ticks)
        return float(self.now)

    def jump(self, seconds: int) -> None:
        self.ticks = itertools.count(self.now + seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr(KielHarvester, "clock", staticmethod(clock))
    return clock


@pytest.fixture
def site():
    pdf = {"body": b"%PDF-1.4 first body"}
    server = FakeServer({
        "/a.pdf": lambda r: Response(200, pdf["body"], content_type="application/pdf"),
        "/page": lambda r: Response(200, b"<html>landing</html>", content_type="text/html; charset=utf-8"),
        "/missing": lambda r: Response(404, b"<html>gone</html>", content_type="text/html"),
        "/r1": lambda r: Response(301, b"", headers={"Location": "/r2"}, content_type="text/plain"),
        "/r2": lambda r: Response(302, b"", headers={"Location": f"{server.url}/final"}, content_type="text/plain"),
        "/final": lambda r: Response(200, b"final body", content_type="text/plain"),
        "/loop1": lambda r: Response(301, b"", headers={"Location": "/loop2"}, content_type="text/plain"),
        "/loop2": lambda r: Response(301, b"", headers={"Location": "/loop1"}, content_type="text/plain"),
        "/b.pdf": lambda r: Response(200, b"%PDF second document", content_type="application/pdf"),
    })
    server.pdf = pdf
    with server:
        yield server


def setup_archive(data_root: Path, text: str) -> None:
    (data_root / "src").mkdir(exist_ok=True)
    (data_root / "src" / "papers.xml").write_text(text)
    (data_root / "branches.xml").write_text(BRANCHES)


def harvest(config, *, harvest_id: str, options: dict | None = None, token: str = "src") -> dict:
    body = {"id": harvest_id, "type": "kiel_archive", "path": "archive", "seeds": [{"id": "s1", "token": token}],
            "options": {"branches": "branches.xml", **(options or {})}}
    ctx, published = context(config)
    run_harvest(body, routing_key=ROUTING_KEY, ctx=ctx)
    return published.statuses[-1]


def totals(status: dict) -> dict:
    out: dict = {}
    for day in status["stats"].values():
        for k, v in day.items():
            out[k] = out.get(k, 0) + v
    return out


def record_dir(data_root: Path, record_id: str = TEXT_ID) -> Path:
    return data_root / "archive" / "records" / NestedRedist().directory(record_id)


def versions(rdir: Path) -> list[str]:
    return sorted(p.name for p in rdir.glob("*.amf.xml"))


def test_renewal_stores_a_version_only_when_the_bytes_differ(config, data_root, site, clock):
    setup_archive(data_root, amf(site.url))
    first = harvest(config, harvest_id="k1")
    assert first["status"] == "completed success", first["errors"]
    text_dir, person_dir = record_dir(data_root), record_dir(data_root, "RePEc:per:1")
    assert len(versions(text_dir)) == 1 and len(versions(person_dir)) == 1
    stored = (text_dir / versions(text_dir)[0]).read_text()
    assert f'id="{TEXT_ID}"' in stored and "RePEc:per:1" not in stored  # one record per file
    start, end = map(int, (text_dir / "00last").read_text().split())
    assert (text_dir / "00last").read_text().endswith("\n") and start <= end
    assert versions(text_dir)[0] == f"{start}.amf.xml"
    assert (text_dir / "00tistbase").read_text() == f"{start}\n"
    assert totals(first)["records_new"] == 2 and totals(first)["records_changed"] == 2

    second = harvest(config, harvest_id="k2")  # nothing changed
    assert len(versions(text_dir)) == 1 and totals(second)["records_unchanged"] == 2
    assert int((text_dir / "00last").read_text().split()[0]) > start  # 00last tracks every renewal

    setup_archive(data_root, amf(site.url, indent="     "))  # whitespace only
    third = harvest(config, harvest_id="k3")
    assert len(versions(text_dir)) == 2 and len(versions(person_dir)) == 1
    assert totals(third)["records_changed"] == 1 and totals(third)["records_unchanged"] == 1

    before = len(site.requests_to("/a.pdf"))
    setup_archive(data_root, amf(site.url, title="Two", urls=("/b.pdf",)))
    fourth = harvest(config, harvest_id="k4")
    assert len(versions(text_dir)) == 3 and "<title>Two</title>" in (text_dir / versions(text_dir)[-1]).read_text()
    assert totals(fourth)["records_changed"] == 1
    assert len(site.requests_to("/a.pdf")) == before  # objects of past versions are not renewed
    assert len(site.requests_to("/b.pdf")) == 1


def object_files(rdir: Path, url: str) -> list[Path]:
    d = rdir / "objects" / escape_name(url)
    return sorted((p for p in d.iterdir() if p.name[0].isdigit() and "_" in p.name), key=lambda p: p.name)


def real_bytes(rdir: Path) -> int:
    """Bytes of object bodies actually on disk (symlinks cost none)."""
    return sum(p.stat().st_size for p in (rdir / "objects").rglob("*_*_*")
               if p.name[0].isdigit() and p.is_file() and not p.is_symlink())


def test_objects_statuses_redirect_chains_and_unchanged_bodies(config, data_root, site, clock):
    setup_archive(data_root, amf(site.url))
    first = harvest(config, harvest_id="k1")
    rdir = record_dir(data_root)
    u = site.url
    pdf = object_files(rdir, f"{u}/a.pdf")
    assert [p.name.split("_", 1)[1] for p in pdf] == ["200_application-pdf"]
    assert pdf[0].read_bytes() == site.pdf["body"]
    assert [p.name.split("_", 1)[1] for p in object_files(rdir, f"{u}/page")] == ["200_text-html"]
    missing = object_files(rdir, f"{u}/missing")
    assert [p.name.split("_", 1)[1] for p in missing] == ["404_text-html"]
    assert missing[0].read_bytes() == b"<html>gone</html>"
    # the 301 -> 302 -> 200 chain: each hop its own object directory, redirects recorded
    r1, r2, final = (object_files(rdir, f"{u}{p}") for p in ("/r1", "/r2", "/final"))
    assert [r1[0].name.split("_", 1)[1], r2[0].name.split("_", 1)[1]] == ["301_text-plain", "302_text-plain"]
    assert final[0].read_bytes() == b"final body"

    def redirect_of(p: str) -> str:
        return next((rdir / "objects" / escape_name(f"{u}{p}")).glob("*.redirect")).read_text()

    assert redirect_of("/r1") == f"{u}/r2\n" and redirect_of("/r2") == f"{u}/final\n"
    assert codes.KIEL_REDIRECT_LOOP in [w["code"] for w in first["warnings"]]
    assert not (rdir / "objects" / escape_name(f"{u}/nothing")).exists()
    # the tist base: one "<tist> <status> <type>" line per effort
    base = (rdir / "objects" / escape_name(f"{u}/missing") / "00tistbase").read_text().splitlines()
    assert [line.split()[1:] for line in base] == [["404", "text-html"]]
    # every request is in the WARC too
    uris = [r[1] for r in read_records(warc_files(data_root / "archive")) if r[0] == "response"]
    assert sorted(set(uris)) == sorted(f"{u}{p}" for p in
                                       ("/a.pdf", "/page", "/missing", "/r1", "/r2", "/final", "/loop1", "/loop2"))

    disk = real_bytes(rdir)
    harvest(config, harvest_id="k2")
    pdf = object_files(rdir, f"{u}/a.pdf")
    assert len(pdf) == 2 and pdf[1].is_symlink() and pdf[1].resolve() == pdf[0].resolve()
    assert pdf[1].read_bytes() == site.pdf["body"]
    assert real_bytes(rdir) == disk  # unchanged bodies cost no disk
    site.pdf["body"] = b"%PDF-1.4 a new edition"
    third = harvest(config, harvest_id="k3")
    pdf = object_files(rdir, f"{u}/a.pdf")
    assert len(pdf) == 3 and not pdf[2].is_symlink() and pdf[2].read_bytes() == b"%PDF-1.4 a new edition"
    assert totals(third)["objects_stored"] >= 1 and totals(third)["objects_unchanged"] >= 1


def test_termination_strategy_prunes_old_versions_and_keeps_linked_bytes(tmp_path, data_root, config, site, clock):
    obj = ObjectDir(tmp_path, "http://example.org/x", root=tmp_path)
    day = 86400
    for i, body in enumerate([b"v1", b"v1", b"v1", b"v2"]):  # versions 2 and 3 link to version 1
        obj.store(tist=i * 10 * day, status=200, content_type="text/plain", body=body)
    assert [v.path.is_symlink() for v in obj.versions()] == [False, True, True, False]
    rules = tmp_path / "termination.ini"
    rules.write_text("[termination]\nmax_full_age = 15d\nmax_control_age = 30d\n")
    strategy = Termination.load(rules)
    assert strategy.prune(obj, now=70 * day) == []  # not renewed for 40 days (> control age): a dead link
    assert len(obj.versions()) == 4
    pruned = strategy.prune(obj, now=33 * day)
    assert pruned == [f"{0}_200_text-plain", f"{10 * day}_200_text-plain"]
    left = obj.versions()
    assert [v.tist for v in left] == [20 * day, 30 * day]
    assert not left[0].path.is_symlink() and left[0].path.read_bytes() == b"v1"  # the bytes moved to the heir
    assert [v.tist for v in Termination(keep_versions=1).doomed(left, now=40 * day)] == [20 * day]

    bad = tmp_path / "bad.ini"
    bad.write_text("[termination]\nmax_full_age = soon\n")
    setup_archive(data_root, amf(site.url, urls=()))
    (data_root / "bad.ini").write_text(bad.read_text())
    status = harvest(config, harvest_id="k1", options={"termination": "bad.ini"})
    assert [w["code"] for w in status["warnings"]] == [codes.KIEL_BAD_TERMINATION]
    (data_root / "keep1.ini").write_text("[termination]\nkeep_versions = 1\n")
    status = harvest(config, harvest_id="k2", options={"termination": "keep1.ini"})
    page = object_files(record_dir(data_root), f"{site.url}/page")
    assert len(page) == 1 and not page[0].is_symlink() and totals(status)["object_versions_pruned"] == 1


def test_check_branches_and_bad_branches_fail_the_harvest(tmp_path, data_root, config, site, clock):
    good = tmp_path / "good.xml"
    good.write_text(BRANCHES)
    runner = CliRunner()
    result = runner.invoke(kiel_command, ["check-branches", str(good)])
    assert result.exit_code == 0 and result.output.count("ok: /amf/text/") == 3
    bad = tmp_path / "bad.xml"
    bad.write_text('<branches>\n<branch xpath="file/url"/>\n<branch xpath="file[url"/>\n<branch/>\n'
                   '<branch xpath="nosuchfn(.)"/>\n</branches>\n')
    result = runner.invoke(kiel_command, ["check-branches", str(bad)])
    assert result.exit_code == 1
    errors = [line for line in result.output.splitlines() if line.startswith("error [kiel_bad_branches]")]
    # the line numbers of the three bad ones
    assert [re.search(r"bad\.xml:(\d+):", e).group(1) for e in errors] == ["3", "4", "5"]
    assert runner.invoke(kiel_command, ["check-branches", str(tmp_path / "none.xml")]).exit_code == 1

    setup_archive(data_root, amf(site.url))
    (data_root / "branches.xml").write_text(bad.read_text())
    status = harvest(config, harvest_id="k1")
    assert status["status"] == "completed failure"
    assert [e["code"] for e in status["errors"]] == [codes.KIEL_BAD_BRANCHES]
    assert not (data_root / "archive" / "records").exists()


def test_repec_redist_http_seed_and_kept_branch_versions(config, data_root, site, clock):
    site.routes["/amf.xml"] = lambda r: Response(200, amf(site.url, urls=()).encode(), content_type="text/xml")
    (data_root / "branches.xml").write_text(BRANCHES)
    status = harvest(config, harvest_id="k1", token=f"{site.url}/amf.xml", options={"redist": "repec"})
    assert status["status"] == "completed success", status["errors"]
    text_dir = data_root / "archive" / "records" / "aaa" / "wpaper" / "0001"
    assert len(versions(text_dir)) == 1 and RepecRedist().directory(TEXT_ID).as_posix() == "aaa/wpaper/0001"
    assert RepecRedist().directory("other:id").parts[0] == "_other"
    assert (data_root / "archive" / "etc" / "branches.xml").read_text() == BRANCHES
    (data_root / "branches.xml").write_text(BRANCHES.replace("displaypage", "title"))
    harvest(config, harvest_id="k2", token=f"{site.url}/amf.xml", options={"redist": "repec"})
    kept = list((data_root / "archive" / "etc").glob("branches_*.xml"))
    assert len(kept) == 1 and kept[0].read_text() == BRANCHES
    with pytest.raises(InvalidMessage, match="options.redist"):  # the declared enum, checked with the message
        harvest(config, harvest_id="k3", options={"redist": "nope"})


def test_escape_name_is_safe_for_any_url():
    long_url = "http://example.org/" + "x" * 500
    for url in ["http://a/b?c=d&e=/f", "..", ".", "", long_url, "http://a/ü"]:
        name = escape_name(url)
        assert "/" not in name and name not in ("", ".", "..") and len(name.encode()) <= 200
    assert escape_name(long_url) != escape_name(long_url + "y")
    assert json.dumps(escape_name("http://a/b")) and os.sep not in escape_name("http://a/b")


def test_bad_amf_is_skipped_with_a_code_and_paths_stay_inside_the_data_root(config, data_root, site, clock):
    setup_archive(data_root, amf(site.url, urls=()))
    (data_root / "src" / "broken.xml").write_text("<amf><text id='x'>")
    (data_root / "src" / "other.xml").write_text("<records/>")
    status = harvest(config, harvest_id="k1")
    assert sorted(w["code"] for w in status["warnings"]) == [codes.KIEL_BAD_RECORD, codes.KIEL_BAD_RECORD]
    assert totals(status)["records_new"] == 2  # the good file's two records were still archived
    outside = harvest(config, harvest_id="k2", token="../../etc")
    assert [e["code"] for e in outside["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT]
    escape = harvest(config, harvest_id="k3", options={"branches": "/etc/passwd"})
    assert [e["code"] for e in escape["errors"]] == [codes.PATH_OUTSIDE_DATA_ROOT]


def test_refused_broken_and_unreachable_objects_keep_their_status(config, data_root, site, clock):
    site.routes["/forbidden"] = lambda r: Response(403, b"no", content_type="text/plain")
    site.routes["/broken"] = lambda r: Response(503, b"down", content_type="text/plain")
    dead = "http://127.0.0.1:9/never"  # the discard port: nothing listens
    setup_archive(data_root, amf(site.url, urls=("/forbidden", "/broken")).replace(
        f"{site.url}/page", dead))
    status = harvest(dataclasses.replace(config, http_retries=0), harvest_id="k1")
    rdir = record_dir(data_root)
    kinds = {url: [p.name.split("_", 1)[1] for p in object_files(rdir, url)]
             for url in (f"{site.url}/forbidden", f"{site.url}/broken", dead)}
    assert kinds == {f"{site.url}/forbidden": ["403_none"], f"{site.url}/broken": ["503_none"], dead: ["000_none"]}
    assert [w["code"] for w in status["warnings"]].count(codes.KIEL_OBJECT_FAILED) == 3
    assert status["status"] == "completed success"  # an object's failure is data, not a failed harvest


def test_the_declared_redist_names_are_the_harvesters():
    # the declaration spells them out (it imports only the core); the harvester looks them up in REDISTS
    assert PLATFORM.options["properties"]["redist"]["enum"] == list(REDISTS)
