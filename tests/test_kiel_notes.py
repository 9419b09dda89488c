"""Kiel notes: two renewals against a local AMF source and object server (a record that changes between
runs, an unchanged body, a changed body, a redirect, a 404, a 5xx, a termination strategy); the notes in
each record directory must tell exactly what the server did, worked out from the server's own log."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from swath.commands.kiel import command as kiel_command
from swath.harvesters.run import run_harvest
from swath.messages import codes
from swath.platforms.kiel.fetch import REDIRECTS
from swath.platforms.kiel.notes import Note, Notebook, notes_files, read_notes
from swath.platforms.kiel.objects import mime_token
from swath.platforms.kiel.redist import NestedRedist, escape_name
from tests.enginekit import context
from tests.fakes.httpserver import FakeServer, Response
from tests.test_kiel import clock  # noqa: F401 - fixture

ROUTING_KEY = "harvest.start.kiel.kiel_archive"
TEXT_ID, PERSON_ID = "RePEc:aaa:wpaper:0042", "RePEc:per:7"
BRANCHES = '<branches>\n  <branch xpath="file/url"/>\n</branches>\n'


def amf_doc(base: str, title: str, paths: list[str]) -> bytes:
    files = "".join(f"\n    <file><url>{base}{p}</url></file>" for p in paths)
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<amf xmlns="http://amf.openlib.org">\n'
            f'  <text id="{TEXT_ID}">\n    <title>{title}</title>{files}\n  </text>\n'
            f'  <person id="{PERSON_ID}"><name>Y</name></person>\n</amf>\n').encode()


@pytest.fixture
def origin():
    """The AMF source and the object server; `served` logs (path, status, content type, body, Location)."""
    state = {"amf": b"", "edition": b"%PDF edition one"}
    served: list[tuple[str, int, str, bytes, str | None]] = []

    def answer(path: str, status: int, body: bytes, content_type: str, location: str | None = None) -> Response:
        served.append((path, status, content_type, body, location))
        return Response(status, body, headers={"Location": location} if location else {}, content_type=content_type)

    server = FakeServer({
        "/amf.xml": lambda r: Response(200, state["amf"], content_type="application/xml"),
        "/same.pdf": lambda r: answer("/same.pdf", 200, b"%PDF the same every time", "application/pdf"),
        "/edition.pdf": lambda r: answer("/edition.pdf", 200, state["edition"], "application/pdf"),
        "/moved": lambda r: answer("/moved", 301, b"", "text/html", location="/target"),
        "/target": lambda r: answer("/target", 200, b"<html>moved here</html>", "text/html; charset=utf-8"),
        "/gone": lambda r: answer("/gone", 404, b"<html>not found</html>", "text/html"),
        "/broken": lambda r: answer("/broken", 503, b"try later", "text/plain"),
        "/new.pdf": lambda r: answer("/new.pdf", 200, b"%PDF added in v2", "application/pdf"),
    })
    server.state, server.served = state, served
    with server:
        yield server


def renew(config, data_root: Path, origin, harvest_id: str, options: dict | None = None) -> dict:
    body = {"id": harvest_id, "type": "kiel_archive", "path": "archive",
            "seeds": [{"id": "s1", "token": f"{origin.url}/amf.xml"}],
            "options": {"branches": "branches.xml", **(options or {})}}
    ctx, published = context(dataclasses.replace(config, http_retries=0))  # a 503 fails at once
    run_harvest(body, routing_key=ROUTING_KEY, ctx=ctx)
    return published.statuses[-1]


def notes_of(data_root: Path, record_id: str) -> list[list[Note]]:
    """The notes of each renewal (one list per notes file, oldest first)."""
    rdir = data_root / "archive" / "records" / NestedRedist().directory(record_id)
    return [[Note.parse(line) for line in path.read_bytes().splitlines()] for path in notes_files(rdir)]


def expected_fetches(origin, log: list, earlier: dict[str, bytes]) -> list[tuple]:
    """(subject, outcome, status, type, location) per response the server gave, in order; a body equal to
    the last one served for that URL in an earlier run is 'unchanged', a 5xx fails (no retries)."""
    out = []
    for path, status, content_type, body, location in log:
        url = origin.url + path
        if status >= 500:
            outcome, kind = "failed", "none"
        elif status in REDIRECTS:
            outcome, kind = "redirected", mime_token(content_type)
        else:
            outcome = "unchanged" if body and earlier.get(url) == body else "stored"
            kind = mime_token(content_type)
        out.append((url, outcome, f"{status:03d}", kind, origin.url + location if location else None))
    return out


def fetches(notes: list[Note]) -> list[tuple]:
    return [(n.subject, n.outcome, n.detail["status"], n.detail["type"], n.detail.get("location"))
            for n in notes if n.event == "fetched"]


def test_notes_tell_what_the_server_did_across_a_record_change(config, data_root, origin, clock):
    (data_root / "branches.xml").write_text(BRANCHES)
    v1 = ["/same.pdf", "/edition.pdf", "/moved", "/gone", "/broken"]
    origin.state["amf"] = amf_doc(origin.url, "First", v1)
    first = renew(config, data_root, origin, "n1")
    assert first["status"] == "completed success", first["errors"]
    run1 = list(origin.served)

    [text1], [person1] = notes_of(data_root, TEXT_ID), notes_of(data_root, PERSON_ID)
    assert [(n.item, n.event, n.outcome) for n in person1] == [("record", "renewed", "new")]
    record = text1[0]
    assert (record.item, record.subject, record.event, record.outcome) == ("record", TEXT_ID, "renewed", "new")
    assert record.detail["objects"] == len(v1)
    assert fetches(text1) == expected_fetches(origin, run1, {})
    failed = [n for n in text1 if n.outcome == "failed"]
    assert [n.subject for n in failed] == [origin.url + "/broken"] and "503" in failed[0].detail["problem"]
    rdir = data_root / "archive" / "records" / NestedRedist().directory(TEXT_ID)
    for note in (n for n in text1 if n.event == "fetched"):  # each names the file it wrote, at its tist
        assert note.detail["file"] == f"{note.tist}_{note.detail['status']}_{note.detail['type']}"
        assert (rdir / "objects" / escape_name(note.subject) / note.detail["file"]).exists()
    first_notes = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in notes_files(rdir)}

    # the record changes: /gone is dropped, /new.pdf added; /edition.pdf gets a new body; keep 1 version each
    v2 = ["/same.pdf", "/edition.pdf", "/moved", "/broken", "/new.pdf"]
    origin.state["amf"] = amf_doc(origin.url, "Second", v2)
    origin.state["edition"] = b"%PDF edition two"
    (data_root / "keep1.ini").write_text("[termination]\nkeep_versions = 1\n")
    second = renew(config, data_root, origin, "n2", {"termination": "keep1.ini"})
    assert second["status"] == "completed success", second["errors"]
    run2 = origin.served[len(run1):]

    text_runs, person_runs = notes_of(data_root, TEXT_ID), notes_of(data_root, PERSON_ID)
    assert len(text_runs) == 2 and len(person_runs) == 2
    assert [(n.event, n.outcome) for n in person_runs[1]] == [("renewed", "unchanged")]
    text2 = text_runs[1]
    record = text2[0]
    versions = sorted(p.name for p in rdir.glob("*.amf.xml"))
    assert (record.event, record.outcome, record.detail["file"], record.detail["previous"]) == (
        "renewed", "changed", versions[1], versions[0])
    kept, added, dropped = set(v1) & set(v2), set(v2) - set(v1), set(v1) - set(v2)
    assert (record.detail["objects_kept"], record.detail["objects_added"], record.detail["objects_dropped"]) == (
        len(kept), len(added), len(dropped))
    assert [(n.subject, n.event, n.outcome) for n in text2 if n.event == "dropped"] == [
        (origin.url + p, "dropped", "kept") for p in v1 if p in dropped]
    last_body = {origin.url + p: body for p, _s, _t, body, _loc in run1}
    assert fetches(text2) == expected_fetches(origin, run2, last_body)
    unchanged = [n for n in text2 if n.outcome == "unchanged"]
    assert {n.subject for n in unchanged} == {origin.url + "/same.pdf", origin.url + "/target"}
    first_files = {n.subject: n.detail["file"] for n in text1 if n.event == "fetched"}
    assert all(n.detail["same_as"] == first_files[n.subject] for n in unchanged)

    # the termination strategy deleted exactly the first run's version of every object renewed again
    renewed_again = {origin.url + p for p, *_ in run2} & set(first_files)
    terminated = [(n.subject, n.detail["file"]) for n in text2 if n.event == "terminated"]
    assert sorted(terminated) == sorted((url, first_files[url]) for url in renewed_again)
    for url, name in terminated:
        assert not (rdir / "objects" / escape_name(url) / name).exists()
    gone = rdir / "objects" / escape_name(origin.url + "/gone")  # dropped: kept, with its only version
    assert [p.name for p in gone.iterdir() if p.name != "00tistbase"] == [first_files[origin.url + "/gone"]]
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in first_notes} == first_notes  # never rewritten
    assert [n.tist for n in text2] == sorted(n.tist for n in text2)  # in the order things happened

    totals = {k: v for day in second["stats"].values() for k, v in day.items()}
    assert totals["objects_dropped"] == len(dropped) and totals["object_versions_pruned"] == len(terminated)
    assert [w["code"] for w in second["warnings"]] == [codes.KIEL_OBJECT_FAILED]

    # swath kiel notes: the same history, oldest first, for a curator and for a script
    runner = CliRunner()
    listed = runner.invoke(kiel_command, ["notes", str(data_root / "archive"), TEXT_ID, "--json"])
    assert listed.exit_code == 0, listed.output
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [{k: v for k, v in r.items() if k != "notes_file"} for r in rows] == [
        n.as_dict() for run in text_runs for n in run]
    human = runner.invoke(kiel_command, ["notes", str(data_root / "archive"), TEXT_ID])
    assert human.exit_code == 0 and len(human.output.splitlines()) == len(rows)
    missing = runner.invoke(kiel_command, ["notes", str(data_root / "archive"), "RePEc:no:such:id"])
    assert missing.exit_code == 1 and f"error [{codes.KIEL_NO_RECORD}]" in missing.output


def test_notes_files_are_fresh_names_and_bad_lines_are_reported(tmp_path):
    book = Notebook("id:1")
    book.record(100, "renewed", "new", file="100.amf.xml")
    book.object(101, "http://example.org/a\tb\n", "fetched", "stored", status="200", same_as=None)
    first, second = book.write(tmp_path, 100), book.write(tmp_path, 100)  # the same second twice
    assert (first.name, second.name) == ("100.notes.jsonl", "101.notes.jsonl")
    (tmp_path / "102.notes.jsonl").write_bytes(first.read_bytes() + b"{not json\n")
    found = list(read_notes(tmp_path, root=tmp_path))
    notes = [n for _p, _l, n in found if isinstance(n, Note)]
    assert len(notes) == 6 and notes[1].subject == "http://example.org/a\tb\n" and "same_as" not in notes[1].detail
    assert [(p.name, line) for p, line, n in found if not isinstance(n, Note)] == [("102.notes.jsonl", 3)]
    assert Notebook("x").write(tmp_path, 5) is None  # nothing done, nothing written


def test_a_link_planted_as_a_notes_file_is_neither_written_through_nor_read(tmp_path):
    record, outside = tmp_path / "record", tmp_path / "outside.txt"
    record.mkdir()
    outside.write_bytes(b'{"tist":1,"item":"record","subject":"x","event":"renewed","outcome":"new"}\n')
    before = outside.read_bytes()
    (record / "100.notes.jsonl").symlink_to(outside)
    book = Notebook("id:1")
    book.record(100, "renewed", "new")
    written = book.write(record, 100)
    assert written.name == "101.notes.jsonl" and not written.is_symlink()
    assert outside.read_bytes() == before
    assert [(p.name, n.subject) for p, _line, n in read_notes(record, root=record)] == [("101.notes.jsonl", "id:1")]
