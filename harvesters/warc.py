"""WARC files of one harvest: naming, gzip-per-record writing, rotation, close-fsync-rename, recovery.

A file is written as `<name>.warc.gz.open` and renamed to `<name>.warc.gz` only after it was
flushed and fsynced, so a finished-looking file is always complete. Each record is flushed as it
is written, so a killed process leaves whole gzip members followed by at most one partial one;
`recover()` cuts the partial tail off.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import queue
import re
import threading
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warcio.warcwriter import WARCWriter

from swath.core.paths import create_new, fsync_dir, make_dirs_inside, safe_id, stays_inside
from swath.core.storage import storage_fault
from swath.harvesters.capture import warc_date as warc_date  # re-exported: harvesters/http.py takes it from here
from swath.harvesters.warc_gzip import GzipMembers
from swath.harvesters.warc_recovery import OPEN_SUFFIX
from swath.harvesters.warc_recovery import recover as recover  # re-exported: its callers take it from here

if TYPE_CHECKING:
    from swath.messages.model import HarvestStart

SOFTWARE = "swath/0.1 (warcio)"
_STAMP = "%Y%m%dT%H%M%SZ"


def harvest_warcinfo(start: HarvestStart, *, host: str) -> dict[str, str]:
    """The warcinfo fields of a harvest's WARCs."""
    return {
        "software": SOFTWARE,
        "format": "WARC File Format 1.0",
        "hostname": host,
        "swath-harvest-id": start.id,
        "swath-harvest-type": start.type,
        "swath-collection-set-id": start.collection_set_id,
        "swath-collection-id": start.collection_id,
    }


def file_sha1(path: Path) -> str:
    digest = hashlib.sha1()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class ClosedWarc:
    """A complete WARC on disk, as reported in warc_created."""

    path: Path
    sha1: str
    bytes: int
    warc_id: str
    date_created: str
    date_first: str | None = None  # its records' earliest and latest WARC-Date (None: not known, a recovered file)
    date_last: str | None = None
    url: str = ""  # where it is kept when not at `path`: its object's s3:// URL (harvesters/uploads.py)

    @property
    def location(self) -> str:
        """What warc_created's `path` says: the object's URL, else the file's path."""
        return self.url or str(self.path)

    @classmethod
    def of(cls, path: Path, harvest_id: str, dates: tuple[str, str] | None = None) -> ClosedWarc:
        """Describe a finished file; the creation date comes from its name, so it is stable."""
        first, last = dates or (None, None)
        return cls(path, file_sha1(path), path.stat().st_size, warc_id(harvest_id, path.name),
                   date_created_of(path.name), first, last)


def date_created_of(name: str) -> str:
    """A WARC's creation date, from its name (now for a name without one)."""
    stamp = re.search(r"-(\d{8}T\d{6}Z)-\d{5}\.warc\.gz$", name)
    created = dt.datetime.strptime(stamp.group(1), _STAMP).replace(tzinfo=dt.UTC) if stamp else None
    return (created or dt.datetime.now(dt.UTC)).isoformat()


def warc_id(harvest_id: str, filename: str) -> str:
    """Stable per file, so a WARC reported again after a resume carries the same id."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"swath:{harvest_id}:{filename}").hex


def name_pattern(harvest_id: str) -> re.Pattern[str]:
    return re.compile(rf"^{re.escape(safe_id(harvest_id))}-(\d{{8}}T\d{{6}}Z)-(\d{{5}})\.warc\.gz(\.open)?$")


def find_harvest_warcs(directory: Path, harvest_id: str) -> tuple[list[Path], list[Path]]:
    """(completed, leftover .open) WARC files of this harvest under `directory`, by serial."""
    pattern = name_pattern(harvest_id)
    done: list[tuple[int, Path]] = []
    leftovers: list[tuple[int, Path]] = []
    for path in directory.glob(f"[0-9][0-9][0-9][0-9]/[0-9][0-9]/[0-9][0-9]/[0-9][0-9]/{safe_id(harvest_id)}-*"):
        match = pattern.match(path.name)
        if match and not path.is_symlink() and stays_inside(directory, path):  # a harvest never links its WARCs
            (leftovers if match.group(3) else done).append((int(match.group(2)), path))
    return [p for _, p in sorted(done)], [p for _, p in sorted(leftovers)]


class WarcFile:
    """One WARC being written: `.open` until `close()` fsyncs and renames it."""

    def __init__(self, *, directory: Path, harvest_id: str, serial: int, info: dict[str, str]) -> None:
        now = dt.datetime.now(dt.UTC)
        self.harvest_id = harvest_id
        folder = make_dirs_inside(directory, directory / now.strftime("%Y/%m/%d/%H"))
        self.final_path = folder / f"{safe_id(harvest_id)}-{now.strftime(_STAMP)}-{serial:05d}.warc.gz"
        self.open_path = self.final_path.with_name(self.final_path.name + OPEN_SUFFIX)
        self._fh = create_new(self.open_path)
        self._members = GzipMembers()
        self.writer = WARCWriter(self._members, gzip=False)  # gzipped by GzipMembers, one member a record
        self.records = 0  # records after the warcinfo
        self.dates: tuple[dt.datetime, dt.datetime] | None = None  # earliest and latest WARC-Date written
        self._last_seen: str | None = None  # the last WARC-Date _saw parsed
        self.write(self.writer.create_warcinfo_record(self.final_path.name, info))

    @property
    def size(self) -> int:
        return self._fh.tell()

    def write(self, *records: Any) -> None:
        self.write_all(records)

    def write_all(self, records: Iterable[Any]) -> None:
        """Append records, each as its own gzip member, with one write and flush for all of them. Records
        built as they are taken (a generator) are compressed one by one as they come: zlib lets go of the
        GIL for each, so the harvest's other threads are not held up while a batch is built."""
        for record in records:
            head = getattr(record, "head", None)  # a PreparedRecord (warc_records.py): its bytes are made
            if head is not None:
                self._members.member(head, record.payload, b"\r\n\r\n")
                self._saw(record.warc_date)
            else:
                self.writer.write_record(record)
                self._saw(record.rec_headers.get_header("WARC-Date"))
            if record.rec_type != "warcinfo":
                self.records += 1
        self._fh.write(self._members.take())
        self._fh.flush()  # whole gzip members reach the OS, so kill -9 loses at most these records

    def _saw(self, warc_date: str | None) -> None:
        """Widen the file's date range by one record's WARC-Date (the WARC index filters harvest dates by it)."""
        if warc_date is not None and warc_date == self._last_seen:
            return  # records of the same second: parsed once
        self._last_seen = warc_date
        try:
            date = dt.datetime.fromisoformat(warc_date.replace("Z", "+00:00")) if warc_date else None
        except ValueError:
            date = None
        if date is None or date.tzinfo is None:
            return
        first, last = self.dates or (date, date)
        self.dates = (min(first, date), max(last, date))

    def close(self) -> ClosedWarc:
        self._fh.flush()
        os.fsync(self._fh.fileno())
        self._fh.close()
        os.replace(self.open_path, self.final_path)
        fsync_dir(self.final_path.parent)
        dates = (self.dates[0].isoformat(), self.dates[1].isoformat()) if self.dates else None
        return ClosedWarc.of(self.final_path, self.harvest_id, dates)

    def discard(self) -> None:
        """Remove a WARC that holds nothing but its warcinfo."""
        self._fh.close()
        self.open_path.unlink()

    def salvage(self) -> ClosedWarc | None:
        """After a failed write: cut the file after its last complete record and close it (None: it held
        none and was removed), so a fault leaves complete WARCs, not an `.open` one."""
        try:
            self._fh.close()
        except OSError:
            pass  # the buffered tail could not be written either; recover() cuts what is not whole
        final = recover(self.open_path)
        return None if final is None else ClosedWarc.of(final, self.harvest_id)


class WarcWriteFailed(RuntimeError):
    """The WARC writer thread failed (e.g. disk full); the harvest cannot record any more. Its cause is the
    error itself: a `StorageFault` (swath.core.storage) when the disk refused the write."""


class WarcSeries:
    """The rotating sequence of WARCs of one harvest, written by its own thread.

    Producers (the platform's thread, the engine's control loop) queue records, or a function that
    builds them so digests and gzip run off the platform's thread, and rotation markers; the writer
    applies them in order. A marker closes the current WARC, then calls `on_closed(closed, token)`
    on the writer thread, so whatever was queued before the marker is in the closed file.
    A failed write (or close) stops the writer: `before_salvage()` is called, the current file is salvaged
    (`WarcFile.salvage`, reported through `on_closed(closed, None)`), `on_failed(error)` is called, and
    producers get WarcWriteFailed.
    """

    QUEUE_SIZE = 256  # back-pressure: a platform outrunning the disk waits here

    def __init__(self, *, directory: Path, harvest_id: str, info: dict[str, str],
                 on_closed: Callable[[ClosedWarc | None, Any], None], first_serial: int = 1,
                 before_rename: Callable[[], None] = lambda: None,
                 before_salvage: Callable[[], None] = lambda: None,
                 on_failed: Callable[[BaseException], None] = lambda error: None) -> None:
        self.directory = directory
        self.harvest_id = harvest_id
        self.info = info
        self.on_closed = on_closed
        self.before_rename = before_rename  # fencing: raises if this process may no longer write here
        self.before_salvage = before_salvage  # gives back space set aside (the run's Ballast): a full disk needs it
        self.on_failed = on_failed
        self.serial = first_serial
        self.current: WarcFile | None = None
        self.written = 0  # bytes on disk of the current WARC once it holds a record, else 0
        self.rotation_pending = threading.Event()
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=self.QUEUE_SIZE)
        self._thread: threading.Thread | None = None
        self._start_lock = threading.Lock()
        self._error: BaseException | None = None

    @property
    def failed(self) -> BaseException | None:
        """The error that stopped the writer (a StorageFault for a disk that refused a write), else None."""
        return self._error

    def write(self, records: list | Callable[[], Iterable[Any]]) -> None:
        self._put("write", records)

    def rotate(self, token: Any) -> None:
        """Close the current WARC after everything queued so far."""
        self.rotation_pending.set()
        self._put("close", token)

    def finish(self, token: Any) -> None:
        """Close the current WARC and wait for the writer to end; raises if writing failed."""
        if self._error is None:
            self.rotate(token)
        if self._thread is not None:
            self._queue.put(("exit", None))
            self._thread.join()
        if self._error is not None:
            raise WarcWriteFailed(f"writing WARCs failed: {self._error}") from self._error

    def has_room(self) -> bool:
        """Whether a write would be queued without waiting for the writer (nearly: another producer may fill it)."""
        return not self._queue.full()

    def check(self) -> None:
        """Raise WarcWriteFailed if the writer has failed."""
        if self._error is not None:
            raise WarcWriteFailed(f"writing WARCs failed: {self._error}") from self._error

    def _put(self, kind: str, value: Any) -> None:
        self.check()
        with self._start_lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=f"warc-{self.harvest_id}", daemon=True)
                self._thread.start()
        self._queue.put((kind, value))

    def _run(self) -> None:
        while True:
            kind, value = self._queue.get()
            if kind == "exit":
                return
            if self._error is not None:
                continue  # keep draining so producers never block; they get the error instead
            try:
                if kind == "write":
                    self._write(value() if callable(value) else value)
                else:
                    closed = self._close_current()
                    self.rotation_pending.clear()
                    self.on_closed(closed, value)
            except BaseException as exc:  # noqa: BLE001 - handed to the producers
                where = self.current.open_path if self.current is not None else self.directory
                self._error = storage_fault(exc, where) or exc
                self._salvage()
                self.on_failed(self._error)

    def _salvage(self) -> None:
        """Close what the failed write left; on failure the `.open` file stays for the next run's recover()."""
        current, self.current, self.written = self.current, None, 0
        if current is None:
            return
        try:
            self.before_salvage()  # on a full disk the cut, fsync and rename may need the space set aside
            self.before_rename()
            closed = current.salvage()
        except Exception:  # noqa: BLE001 - the claim is lost or the disk refuses even this: resume recovers it
            return
        if closed is not None:
            self.on_closed(closed, None)

    def _write(self, records: Iterable[Any]) -> None:
        if self.current is None:
            self.current = WarcFile(directory=self.directory, harvest_id=self.harvest_id,
                                    serial=self.serial, info=self.info)
            self.serial += 1
        self.current.write_all(records)
        self.written = self.current.size if self.current.records else 0

    def _close_current(self) -> ClosedWarc | None:
        """Finish the current WARC; an empty one (warcinfo only) is removed and None returned."""
        current, self.current, self.written = self.current, None, 0
        if current is None:
            return None
        if current.records == 0:
            current.discard()
            return None
        self.before_rename()
        return current.close()
