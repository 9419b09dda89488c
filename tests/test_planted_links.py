"""Every writer with links planted where it writes or lists (issue 30 items 1 and 2): nothing is written through a
link, and no file a link brings in from outside the data root is packaged or exported (core/paths.py)."""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import zipfile
from pathlib import Path

import pytest

from swath.core.errors import SwathError
from swath.core.paths import PathOutsideDataRoot, create_new, stays_inside, write_atomic
from swath.core.stops import record_stop
from swath.exporters.scans import scan
from swath.exporters.warc_index import CACHE_NAME, ScanIndex
from swath.harvesters.claims import HarvestClaim
from swath.harvesters.outcome import FinalOutcome
from swath.harvesters.state import STATE_FILE, StateStore
from swath.harvesters.warc import find_harvest_warcs, recover
from swath.messages import codes
from tests.requesterkit import swath
from tests.test_engine_units import _write_warc
from tests.test_export import collections, expected_items, export, out_dir, run, warcs_of  # noqa: F401 - fixtures

VICTIM = b"outside the data root: never to be written\n"
SFM_FLICKR = "sfm-warcs/flickr/1"


@pytest.fixture
def outside(data_root: Path) -> Path:
    """A folder beside the data root, with a file a planted link points at."""
    folder = data_root.parent / "outside"
    folder.mkdir()
    (folder / "victim").write_bytes(VICTIM)
    return folder


def plant(link: Path, target: Path) -> Path:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


@pytest.fixture
def collection(data_root: Path, outside: Path, fixtures_dir: Path) -> tuple[Path, list[Path], Path]:
    """A collection folder with two WARCs, and a third WARC outside the data root linked into it."""
    warcs = sorted((fixtures_dir / SFM_FLICKR).rglob("*.warc.gz"), key=str)
    coll = data_root / "coll"
    (coll / "2016").mkdir(parents=True)
    for warc in warcs[:2]:
        shutil.copy(warc, coll / "2016" / warc.name)
    shutil.copy(warcs[2], outside / "foreign.warc.gz")
    return coll, warcs[:2], plant(coll / "2016" / "planted.warc.gz", outside / "foreign.warc.gz")


def archived(package: Path) -> list[str]:
    with zipfile.ZipFile(package) as zf:
        return sorted(Path(n).name for n in zf.namelist() if n.startswith("archive/"))


def test_wacz_does_not_write_through_a_planted_part(config, data_root: Path, outside: Path, collection) -> None:
    """Item 1: `pkg.wacz.part -> /anywhere` got the ZIP written over its target, and pkg.wacz became the link."""
    coll, _, _ = collection
    output = data_root / "exports" / "pkg.wacz"
    plant(output.with_name("pkg.wacz.part"), outside / "victim")
    swath(config, "wacz", str(coll), "-o", str(output), "--json")
    assert (outside / "victim").read_bytes() == VICTIM
    assert not output.is_symlink() and zipfile.is_zipfile(output)


def test_wacz_does_not_pack_a_warc_linked_from_outside(config, data_root: Path, collection) -> None:
    """Item 2: a `*.warc.gz` link leading out of the data root was packaged into archive/."""
    coll, inside, planted = collection
    output = data_root / "exports" / "pkg.wacz"
    done = swath(config, "wacz", str(coll), "-o", str(output), "--json")
    assert archived(output) == sorted(w.name for w in inside)
    assert done["warcs"] == len(inside) and done["skipped_outside"] == [str(planted)]


def test_export_neither_writes_through_a_planted_part_nor_reads_a_warc_linked_from_outside(
        run, collections: Path, outside: Path, config) -> None:
    inside = warcs_of(collections, "1")
    expected = len(expected_items(inside, "flickr_photo"))
    shutil.copy(inside[0], outside / "copy.warc.gz")  # its photos would be exported twice through the link
    plant(inside[0].parent / "zz-planted.warc.gz", outside / "copy.warc.gz")
    plant(out_dir(config) / ".exp1_001.csv.part", outside / "victim")

    status = run(export("flickr_user", "1"))

    assert status["status"] == "completed success", status
    assert (outside / "victim").read_bytes() == VICTIM
    final = out_dir(config) / "exp1_001.csv"
    assert not final.is_symlink() and final.read_text().count("\n") == expected + 1  # header + the inside photos
    assert codes.PATH_OUTSIDE_DATA_ROOT in [w["code"] for w in status["warnings"]]


def test_xlsx_export_does_not_write_through_a_planted_part(run, collections: Path, outside: Path, config) -> None:
    plant(out_dir(config) / ".exp1_001.xlsx.part", outside / "victim")
    status = run(export("flickr_user", "1", format="xlsx"))
    assert status["status"] == "completed success", status
    assert (outside / "victim").read_bytes() == VICTIM
    assert zipfile.is_zipfile(out_dir(config) / "exp1_001.xlsx")


def test_harvest_files_refuse_planted_links(data_root: Path, outside: Path) -> None:
    coll = data_root / "coll"
    # state: a link in place of the state file or of its lock is refused, neither read nor written through
    plant(coll / STATE_FILE, outside / "victim")
    with pytest.raises(PathOutsideDataRoot):
        StateStore(directory=coll)
    (coll / STATE_FILE).unlink()
    plant(coll / f".{STATE_FILE}.lock", outside / "lock-made-outside")
    with pytest.raises(PathOutsideDataRoot):
        StateStore(directory=coll).commit({"since": 2})
    # claims and stop markers live under .swath: a .swath link leading out is refused
    plant(data_root / ".swath", outside)
    with pytest.raises(PathOutsideDataRoot):
        HarvestClaim(data_root=data_root, harvest_id="h").acquire(give_up=threading.Event())
    with pytest.raises(PathOutsideDataRoot):
        record_stop(data_root, "h")
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]


def test_warc_leftovers_and_finished_names_that_are_links_are_not_taken_up(data_root: Path, outside: Path) -> None:
    coll = data_root / "coll"
    own = _write_warc(coll, "h:1", 2)  # the harvest's real leftover, beside the planted ones
    folder = own.parent
    plant(folder / "h_1-20240101T000000Z-00002.warc.gz.open", outside / "victim")
    shutil.copy(own, outside / "foreign.warc.gz")
    plant(folder / "h_1-20240101T000000Z-00003.warc.gz", outside / "foreign.warc.gz")
    done, leftovers = find_harvest_warcs(coll, "h:1")
    assert (done, leftovers) == ([], [own])
    with pytest.raises(PathOutsideDataRoot):
        recover(folder / "h_1-20240101T000000Z-00002.warc.gz.open")
    assert (outside / "victim").read_bytes() == VICTIM


def test_caches_and_atomic_writes_replace_a_planted_link(data_root: Path, outside: Path, fixtures_dir: Path) -> None:
    plant(data_root / CACHE_NAME, outside / "victim")
    ScanIndex(data_root=data_root)  # its listing cache is saved over the link, not through it
    assert not (data_root / CACHE_NAME).is_symlink()
    target = data_root / "kiel" / "branches.xml"  # how Kiel and META-SHARE storage write
    plant(target, outside / "victim")
    write_atomic(target, b"<branches/>")
    assert target.read_bytes() == b"<branches/>" and not target.is_symlink()
    with pytest.raises(PathOutsideDataRoot):
        create_new(plant(data_root / "new.bin", outside / "absent"))
    warc = next((fixtures_dir / SFM_FLICKR).rglob("*.warc.gz"))
    plant(data_root / ".swath" / "records", outside)  # the scan cache folder leading out: not written, still read
    assert scan(str(warc), is_fact=None, cache_root=data_root).refs
    assert (outside / "victim").read_bytes() == VICTIM and not (outside / "absent").exists()
    assert sorted(p.name for p in outside.iterdir()) == ["victim"]
    assert not stays_inside(data_root, data_root / ".swath" / "records") and stays_inside(data_root, target)
    assert os.path.islink(data_root / "new.bin")


def _opened_within(call, fifo: Path) -> BaseException | None:
    """What `call` raised (None: it returned), or fail if it still blocks on the FIFO after a minute; the FIFO's
    writing end is then opened and closed, so a blocked reader ends (at EOF) instead of outliving the test."""
    raised: list[BaseException | None] = []

    def target() -> None:
        try:
            call()
            raised.append(None)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    blocked = thread.is_alive()
    if blocked:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        thread.join(60)
    assert not blocked, f"blocked opening the FIFO at {fifo}"
    return raised[0]


def test_a_fifo_planted_as_state_or_leftover_is_refused_not_waited_on(data_root: Path) -> None:
    # a FIFO opens only once something writes to it: planted where swath reads, it held the harvest for ever
    coll = data_root / "coll"
    coll.mkdir()
    os.mkfifo(coll / STATE_FILE)
    assert isinstance(_opened_within(lambda: StateStore(directory=coll), coll / STATE_FILE), PathOutsideDataRoot)
    own = _write_warc(coll, "h:1", 2)
    leftover = own.parent / "h_1-20240101T000000Z-00002.warc.gz.open"
    os.mkfifo(leftover)
    assert isinstance(_opened_within(lambda: recover(leftover), leftover), PathOutsideDataRoot)


@pytest.mark.parametrize("content", [b"\x00{not json", b"[1, 2]", b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe"])
def test_a_state_file_that_is_not_one_swath_wrote_is_refused_with_a_code(data_root: Path, content: bytes) -> None:
    coll = data_root / "coll"
    coll.mkdir()
    (coll / STATE_FILE).write_bytes(content)
    with pytest.raises(SwathError) as info:
        StateStore(directory=coll)
    assert info.value.code == codes.STATE_UNREADABLE and STATE_FILE in info.value.message


def test_fifos_planted_as_caches_outcomes_or_claims_are_passed_over(data_root: Path, fixtures_dir: Path) -> None:
    # what swath keeps beside the data (caches, a harvest's final outcome, a claim's holder) is read back too
    warc = next((fixtures_dir / SFM_FLICKR).rglob("*.warc.gz"))
    cache = data_root / ".swath" / "records" / f"{hashlib.sha1(os.path.realpath(warc).encode()).hexdigest()}.json"
    outcome = FinalOutcome(directory=data_root / "coll", harvest_id="h:1")
    claim = HarvestClaim(data_root=data_root, harvest_id="h:1")
    for fifo in (cache, data_root / CACHE_NAME, outcome.path, claim.path):
        fifo.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(fifo)
    assert _opened_within(lambda: scan(str(warc), is_fact=None, cache_root=data_root).refs, cache) is None
    assert _opened_within(lambda: ScanIndex(data_root=data_root), data_root / CACHE_NAME) is None
    assert _opened_within(outcome.read, outcome.path) is None and outcome.read() is None  # as if none was recorded
    assert _opened_within(claim.holder, claim.path) is None and claim.holder() == "another process"
