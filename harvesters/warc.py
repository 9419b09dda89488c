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
import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from warcio.warcwriter import WARCWriter

from swath.core.paths import create_new, fsync_dir, make_dirs_inside, open_no_follow, safe_id, stays_inside
from swath.core.storage import storage_fault
from swath.harvesters.capture import warc_date as warc_date  # re-exported: harvesters/http.py takes it from here

SOFTWARE = "swath/0.1 (warcio)"
OPEN_SUFFIX = ".open"
_STAMP = "%Y%m%dT%H%M%SZ"
GZIP_LEVEL = 6  # warcio's own wrapper uses 9: ~40 % more CPU on JSON pages for ~1 % smaller files


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


def _complete_members(data: bytes) -> Iterable[tuple[int, bytes]]:
    """Yield (end offset, decompressed bytes) for each complete gzip member, stopping at a broken one."""
    offset = 0
    while offset < len(data):
        inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
        try:
            block = inflater.decompress(data[offset:])
        except zlib.error:
            return
        if not inflater.eof:
            return
        offset = len(data) - len(inflater.unused_data)
        yield offset, block


def _is_whole_record(block: bytes) -> bool:
    head, sep, rest = block.partition(b"\r\n\r\n")
    if not sep or not head.startswith(b"WARC/"):
        return False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return rest == rest[: int(value)] + b"\r\n\r\n" and len(rest) == int(value) + 4
    return False


def recover(open_path: Path) -> Path | None:
    """Cut a leftover `.open` WARC after its last complete record, fsync and rename it.

    Returns the finished path, or None (file removed) when not even one complete record survived.
    """
    with open_no_follow(open_path, write=True) as fh:  # a link planted as a leftover is refused, not cut
        data = fh.read()
        good_end, content_records = _complete_end(data)
        if content_records:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    if content_records == 0:
        open_path.unlink()
        return None
    final = open_path.with_name(open_path.name[: -len(OPEN_SUFFIX)])
    os.replace(open_path, final)
    fsync_dir(final.parent)
    return final


def _complete_end(data: bytes) -> tuple[int, int]:
    """Where the last complete record of a leftover ends, and how many complete records other than the warcinfo."""
    good_end = 0
    content_records = 0  # complete records other than the warcinfo
    for end, block in _complete_members(data):
        if not _is_whole_record(block):
            break
        good_end = end
        if b"\r\nWARC-Type: warcinfo\r\n" not in block.partition(b"\r\n\r\n")[0] + b"\r\n":
            content_records += 1
    return good_end, content_records


class WarcFile:
    """One WARC being written: `.open` until `close()` fsyncs and renames it."""

    def __init__(self, *, directory: Path, harvest_id: str, serial: int, info: dict[str, str]) -> None:
        now = dt.datetime.now(dt.UTC)
        self.harvest_id = harvest_id
        folder = make_dirs_inside(directory, directory / now.strftime("%Y/%m/%d/%H"))
        self.final_path = folder / f"{safe_id(harvest_id)}-{now.strftime(_STAMP)}-{serial:05d}.warc.gz"
        self.open_path = self.final_path.with_name(self.final_path.name + OPEN_SUFFIX)
        self._fh = create_new(self.open_path)
        self._members = _GzipMembers()
        self.writer = WARCWriter(self._members, gzip=False)  # gzipped by _GzipMembers, one member a record
        self.records = 0  # records after the warcinfo
        self.dates: tuple[dt.datetime, dt.datetime] | None = None  # earliest and latest WARC-Date written
        self._last_seen: str | None = None  # the last WARC-Date _saw parsed
        self.write(self.writer.create_warcinfo_record(self.final_path.name, info))

    @property
    def size(self) -> int:
        return self._fh.tell()

    def write(self, *records) -> None:
        """Append records, each as its own gzip member, with one write and flush for all of them."""
        for record in records:
            self.writer.write_record(record)
            self._saw(record.rec_headers.get_header("WARC-Date"))
        self._fh.write(self._members.take())
        self._fh.flush()  # whole gzip members reach the OS, so kill -9 loses at most these records
        self.records += sum(1 for record in records if record.rec_type != "warcinfo")

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


class _GzipMembers:
    """The file-like warcio writes a record to: compressed as it comes (no uncompressed copy of the
    record), each record its own gzip member, since warcio flushes once at the end of every record."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []
        self._compressor: Any = None

    def write(self, data: bytes) -> int:
        if self._compressor is None:
            self._compressor = zlib.compressobj(GZIP_LEVEL, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        self._parts.append(self._compressor.compress(data))
        return len(data)

    def flush(self) -> None:
        if self._compressor is not None:
            self._parts.append(self._compressor.flush())
            self._compressor = None

    def take(self) -> bytes:
        """The members written since the last take()."""
        data, self._parts = b"".join(self._parts), []
        return data


class WarcWriteFailed(RuntimeError):
    """The WARC writer thread failed (e.g. disk full); the harvest cannot record any more. Its cause is the
    error itself: a `StorageFault` (swath.core.storage) when the disk refused the write."""


class WarcSeries:
    """The rotating sequence of WARCs of one harvest, written by its own thread.

    Producers (the platform's thread, the engine's control loop) queue records, or a function that
    builds them so digests and gzip run off the platform's thread, and rotation markers; the writer
    applies them in order. A marker closes the current WARC, then calls `on_closed(closed, token)`
    on the writer thread, so whatever was queued before the marker is in the closed file.
    A failed write (or close) stops the writer: the current file is salvaged (`WarcFile.salvage`, reported
    through `on_closed(closed, None)`), `on_failed(error)` is called, and producers get WarcWriteFailed.
    """

    QUEUE_SIZE = 256  # back-pressure: a platform outrunning the disk waits here

    def __init__(self, *, directory: Path, harvest_id: str, info: dict[str, str],
                 on_closed: Callable[[ClosedWarc | None, Any], None], first_serial: int = 1,
                 before_rename: Callable[[], None] = lambda: None,
                 on_failed: Callable[[BaseException], None] = lambda error: None) -> None:
        self.directory = directory
        self.harvest_id = harvest_id
        self.info = info
        self.on_closed = on_closed
        self.before_rename = before_rename  # fencing: raises if this process may no longer write here
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

    def write(self, records: list | Callable[[], list]) -> None:
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

    def _put(self, kind: str, value: Any) -> None:
        if self._error is not None:
            raise WarcWriteFailed(f"writing WARCs failed: {self._error}") from self._error
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
            self.before_rename()
            closed = current.salvage()
        except Exception:  # noqa: BLE001 - the claim is lost or the disk refuses even this: resume recovers it
            return
        if closed is not None:
            self.on_closed(closed, None)

    def _write(self, records: list) -> None:
        if self.current is None:
            self.current = WarcFile(directory=self.directory, harvest_id=self.harvest_id,
                                    serial=self.serial, info=self.info)
            self.serial += 1
        self.current.write(*records)
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
