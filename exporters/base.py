"""The export job: export.start.<platform>.<type> in, files and export.status messages out.

run_export is the list of steps; as in Scrapy's feed exports, which items (records, dedupe),
which format (writers.py) and where (output.py) stay apart:

    accept, resolve          the message: type, format, folder inside the data root
    planning.select_warcs    1. the WARCs of the collection (or all, for seeds) on disk; none: no_warcs
    planning.plan_reads      2. their records (scans.py), harvest dates, order, facts -> a Plan
    reader.Readers.batches   3. records -> Batches of encoded items (records.RecordReader; in reader
                                processes when the input is big)
    write_rows, rows         4. Batches -> deduped rows, one output.Outputs segment series per table
    Report.unreadable        5. unreadable bodies fail the export unless skip_unreadable; no item:
    empty.why_empty             a failure, or a warning for an asked date range (export_empty)
    Outputs.commit           6. final file names, then Report's notes and last export.status
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

from swath.core.config import Config
from swath.core.errors import SwathError
from swath.core.jobs import JobContext, JobInterrupted
from swath.core.jsontypes import JSONObject
from swath.core.objects_base import StorageRefused, StorageUnavailable
from swath.core.paths import PathOutsideDataRoot, export_path, make_dirs_inside
from swath.core.storage import check_free_space, storage_fault
from swath.core.warc_files import use_storage
from swath.exporters import registry
from swath.exporters.dedupe import SeenIds
from swath.exporters.empty import no_warcs, why_empty
from swath.exporters.output import OutputBlocked, Outputs, Written
from swath.exporters.planning import plan_reads, select_warcs
from swath.exporters.reader import Readers, processes_for
from swath.exporters.records import Batch, Payload, Tally, Unreadable
from swath.exporters.warc_index import ScanIndex, WarcIndex
from swath.exporters.writers import FORMATS, Writer
from swath.harvesters.retry import storage_retry
from swath.messages import codes
from swath.messages.model import (
    COMPLETED_FAILURE,
    COMPLETED_SUCCESS,
    RUNNING,
    ExportStart,
    ExportStatus,
    Note,
    Origin,
    now_iso,
)
from swath.messages.routing import parse

PROGRESS_INTERVAL = 1.0  # seconds between progress lines for people (ctx.progress); statuses keep their interval

def run_export(body: JSONObject, *, routing_key: str, ctx: JobContext, index: WarcIndex | None = None,
               workers: int | None = None) -> None:
    """swath.core.jobs.Job for every export type (see exporters.registry).

    `index` and `workers` (reader processes; None: SWATH_EXPORT_WORKERS, else by input size) are for tests
    and tools.
    """
    report = Report(export_id=export_id(body), routing_key=routing_key, ctx=ctx)
    start = accept(body, report)
    if start is None:
        return
    config = ctx.config
    where = config.export_base  # what a storage fault names: the export's folder once known
    outputs: Outputs | None = None
    try:
        check_free_space(config.export_base, config.min_free_bytes, what=f"export {start.id}")  # before any folder
        request = resolve(start, config=config)
        where = request.directory
        index = index or ScanIndex(data_root=config.harvest_base)
        use_storage(config, retry=storage_retry(config))  # s3:// WARCs' store
        selected = select_warcs(start, index=index, report=report, data_root=config.harvest_base)
        warcs = selected.warcs
        if not warcs and not selected.outside_dates:
            raise ExportFailed(no_warcs(start, index=index, data_root=config.harvest_base), code=codes.NO_WARCS)
        report.warcs_total = len(warcs)
        report.running()  # after the selection, so the first status already says how many WARCs there are
        with Readers(processes_for(warcs, asked=workers, config=ctx.config)) as readers:
            reads = plan_reads(start, warcs, dedupe=request.dedupe, scanner=readers, report=report,
                               cache_root=config.data_root)
            outputs = Outputs(directory=request.directory, export_id=start.id, writer_cls=request.writer_cls,
                              segment_size=start.segment_size, tables=reads.tables,
                              primary=request.export_type.primary_table)
            read = write_rows(readers.batches(reads.plan, reads.refs), outputs=outputs, dedupe=request.dedupe,
                              spill_dir=request.directory, report=report, warc_ends=reads.warc_ends)
        report.unreadable(read.unreadable, skip=start.skip_unreadable)
        report.duplicates_noted()
        if not report.items:
            empty = why_empty(start, read.tally, warcs=len(warcs), reads=reads,
                              skipped=sum(u.items for u in read.unreadable.values()),
                              warcs_outside=selected.outside_dates)
            if empty.fail:
                raise ExportFailed(empty.message, code=codes.EXPORT_EMPTY)
            report.warn(codes.EXPORT_EMPTY, empty.message)
        files = report.tables_written(outputs.commit(), primary=outputs.primary)
    except (ExportFailed, OutputBlocked, StorageUnavailable, StorageRefused) as exc:  # object storage: its code
        _abort(outputs)
        report.failed(exc.code, exc.message)
        return
    except Exception as exc:  # noqa: BLE001 - every failure must end in a status
        _abort(outputs)
        fault = storage_fault(exc, where)
        if fault is None:
            _end_early(exc, report=report, ctx=ctx)
            return
        ctx.log.warning("export %s stopped: %s: %s", report.export_id, fault.code, fault.message)
        report.failed(fault.code, f"{fault.message}; the export stopped and its partial files were removed: "
                                  "run it again once there is room")
        return
    report.succeeded(files)


# --- the message ---
class ExportFailed(SwathError):
    """A request no export can answer: a failure status with this code, not a dead letter."""


@dataclass(frozen=True, kw_only=True)
class Request:
    export_type: registry.ExportType
    writer_cls: type[Writer]
    directory: Path  # inside the data root, created
    dedupe: bool  # current-state tables (datasets, LRs, Xesam payloads) always keep only an item's latest copy


def export_id(body: object) -> str:
    """The id statuses carry; none is published before accept() has checked it."""
    value = body.get("id") if isinstance(body, dict) else None
    return value if isinstance(value, str) else ""


def accept(body: object, report: Report) -> ExportStart | None:
    """The message as an ExportStart, or None once a request without exactly one of seeds/collection got
    its failure status."""
    # SFM asks for exactly one of seeds/collection: a failure status, not a dead letter.
    if isinstance(body, dict) and isinstance(body.get("id"), str) and body["id"]:
        if ("seeds" in body) == ("collection" in body):
            report.failed(codes.BAD_REQUEST, "an export needs exactly one of seeds or collection")
            return None
    return ExportStart.from_dict(body)  # InvalidMessage: the runtime dead-letters it


def resolve(start: ExportStart, *, config: Config) -> Request:
    """The type, format and folder the message names, or ExportFailed with the code that says which is wrong."""
    try:
        export_type = registry.lookup(start.type)
    except registry.UnknownExportType as exc:
        raise ExportFailed(exc.message, code=codes.UNKNOWN_TYPE) from None
    writer_cls = FORMATS.get(start.format)
    if writer_cls is None:
        raise ExportFailed(f"format {start.format!r} is not one of {', '.join(FORMATS)}",
                           code=codes.UNSUPPORTED_EXPORT_FORMAT)
    try:
        directory = export_path(config, start.path)
        make_dirs_inside(Path(os.path.realpath(config.export_base)), directory)  # a link planted meanwhile is refused
    except PathOutsideDataRoot as exc:
        raise ExportFailed(str(exc), code=codes.PATH_OUTSIDE_DATA_ROOT) from None
    return Request(export_type=export_type, writer_cls=writer_cls, directory=directory,
                   dedupe=start.dedupe or export_type.current_state)


# --- batches to rows ---
@dataclass
class Read:
    """What the batches met besides their rows: the unreadable bodies per WARC, and the Tally."""

    unreadable: dict[str, Unreadable] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)


def write_rows(batches: Iterable[Batch], *, outputs: Outputs, dedupe: bool, spill_dir: Path, report: Report,
               warc_ends: list[int]) -> Read:
    """Write every batch's rows; returns what could not be read and what reading met. `warc_ends`: where
    each WARC's records end (planning.Reads), for the progress count."""
    seen = SeenIds(spill_dir=spill_dir) if dedupe else None
    read = Read()
    records = 0
    try:
        for batch in batches:
            for table, payloads in rows(batch, seen):
                outputs.write(table, payloads)
                report.items += len(payloads)
            for warc, found in batch.unreadable.items():
                read.unreadable.setdefault(warc, Unreadable()).add(found)
            read.tally.add(batch.tally)
            report.count_duplicates(batch.duplicate_keys)
            records += batch.records
            report.warcs_done = sum(1 for end in warc_ends if end <= records)
            report.tick()
    finally:
        if seen is not None:
            seen.close()
    return read


def rows(batch: Batch, seen: SeenIds | None) -> Iterator[tuple[str, list[Payload]]]:
    """What a batch writes, as runs of one table in batch order. Repeats and tombstones are left out (a
    tombstone's key is remembered, so older copies stay out)."""
    table = batch.table
    if seen is None:
        fresh = None
    elif table is not None:
        fresh = seen.add_keys(table, batch.keys)
    else:
        fresh = [seen.add_keys(t, [k]) is None for t, k in zip(batch.tables, batch.keys, strict=True)]
    if table is not None:  # one table (the usual case): one write, even of nothing, so the table has its file
        payloads = batch.payloads
        if fresh is not None:
            payloads = [p for p, new in zip(payloads, fresh, strict=True) if new]
        if batch.tombstones:
            payloads = [p for p in payloads if p is not None]
        yield table, cast("list[Payload]", payloads)  # without tombstones no payload is None
        return
    run: list[Payload] = []
    run_table = ""
    for n, (table_n, payload) in enumerate(zip(batch.tables, batch.payloads, strict=True)):
        if (fresh is not None and not fresh[n]) or payload is None:
            continue
        if table_n != run_table and run:
            yield run_table, run
            run = []
        run_table = table_n
        run.append(payload)
    if run:
        yield run_table, run


# --- the end ---
def _abort(outputs: Outputs | None) -> None:
    if outputs is not None:
        try:
            outputs.abort()
        except OSError:  # a read-only disk keeps even the partial files; they are never renamed to final names
            pass


def _end_early(exc: Exception, *, report: Report, ctx: JobContext) -> None:
    """The final status of an export that broke or was stopped (its files are gone already)."""
    # a reader broken by the same Ctrl-C/SIGTERM that stopped the export is part of the stop, not a bug
    if not isinstance(exc, JobInterrupted) and not ctx.stop.is_set():
        ctx.log.exception("export %s failed", report.export_id)
        report.failed(codes.UNKNOWN_ERROR, f"{type(exc).__name__}: {exc}")
        return
    if ctx.shutdown.is_set():  # redelivered and redone from the start after the restart
        raise exc if isinstance(exc, JobInterrupted) else JobInterrupted(f"export {report.export_id} interrupted")
    report.failed(codes.UNKNOWN_ERROR, "export stopped before it finished; no files kept")


class Report:
    """Notes (infos, warnings, errors) gathered on the way, in every status message sent after them."""

    def __init__(self, *, export_id: str, routing_key: str, ctx: JobContext) -> None:
        self.export_id = export_id
        self.ctx = ctx
        self.status_key = str(parse(routing_key).status_key())
        self.origin = Origin(service=ctx.service, host=ctx.config.host, instance=ctx.instance)
        self.date_started = now_iso()
        self.infos: list[Note] = []
        self.warnings: list[Note] = []
        self.errors: list[Note] = []
        self.items = 0  # items written
        self.warcs_done = 0
        self.warcs_total = 0
        self.duplicate_keys: dict[str, int] = {}  # per WARC: responses whose JSON repeated a key
        self._started = self._last_status = self._last_progress = time.monotonic()

    def _publish(self, status: str, **extra: object) -> None:
        msg = ExportStatus(
            id=self.export_id, status=status, origin=self.origin, date_started=self.date_started,
            date_ended=None if status == RUNNING else now_iso(), infos=list(self.infos),
            warnings=list(self.warnings), errors=list(self.errors), extra=extra,
        )
        self.ctx.publish(self.status_key, msg.to_dict())

    def _progress(self) -> dict[str, object]:
        return {"progress": {"items": self.items, "warcs_done": self.warcs_done, "warcs_total": self.warcs_total}}

    # --- notes ---
    def info(self, code: str, message: str) -> None:
        if self.ctx.config.requester == "sfm" and code in codes.SWATH_INTERNAL_INFOS:
            self.ctx.log.info("%s: %s", code, message)  # the log keeps it; sfm-ui would show it to its users
            return
        self.infos.append(Note(code, message))

    def warn(self, code: str, message: str) -> None:
        self.warnings.append(Note(code, message))
        self.ctx.log.warning("%s: %s", code, message)

    # --- statuses ---
    def running(self) -> None:
        self._publish(RUNNING, **self._progress())

    def tick(self) -> None:
        """Between pieces of work: stop if asked to, and say how far the export got every status_interval."""
        if self.ctx.stop.is_set():
            raise JobInterrupted(f"export {self.export_id} interrupted")
        now = time.monotonic()
        if now - self._last_progress >= PROGRESS_INTERVAL:
            self._last_progress = now
            self.ctx.progress(self.progress_line())
        if now - self._last_status >= self.ctx.config.status_interval:
            self._last_status = now
            self.running()

    def progress_line(self) -> str:
        """For people: WARCs read of all selected, items written and how fast."""
        seconds = max(time.monotonic() - self._started, 1e-3)
        return (f"export {self.export_id}: {self.warcs_done}/{self.warcs_total} WARCs read, {self.items} items, "
                f"{self.items / seconds:.0f} items/s")

    def succeeded(self, files: list[Path]) -> None:
        self.warcs_done = self.warcs_total
        self.ctx.progress(self.progress_line())
        self._publish(COMPLETED_SUCCESS, files=[str(f) for f in files], items=self.items)

    def failed(self, code: str, message: str) -> None:
        self.errors.append(Note(code, message))
        self._publish(COMPLETED_FAILURE)

    # --- the summary at the end ---
    def unreadable(self, found: dict[str, Unreadable], *, skip: bool) -> None:
        """A note per WARC for bodies and lines that could not be read; ExportFailed unless asked to skip them.
        A stream's last line cut mid-item is only a warning: that item was never received whole."""
        bodies = warcs = 0
        for warc, what in found.items():
            if what.cut:
                self.warn(codes.STREAM_LINE_CUT, f"{warc}: {what.cut} stream segment(s) ended in a line cut "
                          "mid-item (the connection or the harvest ended there); skipped")
            if not what.items:
                continue
            bodies += what.items
            warcs += 1
            note = f"{warc}: {what.items} response body(ies) or stream line(s) could not be read; first: {what.first}"
            if skip:
                self.warn(codes.ITEM_UNREADABLE, f"{note}; skipped as asked (skip_unreadable)")
            else:
                self.errors.append(Note(codes.ITEM_UNREADABLE, note))
        if bodies and not skip:
            raise ExportFailed(f"{bodies} response body(ies) or stream line(s) in {warcs} WARC(s) could "
                               "not be read, so the export would be incomplete; no files kept. To export the rest, "
                               "set options.skip_unreadable (swath export run --skip-unreadable)",
                               code=codes.ITEM_UNREADABLE)

    def count_duplicates(self, per_warc: dict[str, int]) -> None:
        for warc, n in per_warc.items():
            self.duplicate_keys[warc] = self.duplicate_keys.get(warc, 0) + n

    def duplicates_noted(self) -> None:
        for warc, n in self.duplicate_keys.items():
            self.warn(codes.DUPLICATE_JSON_KEYS, f"{warc}: {n} response(s) repeated a key in a JSON object; each "
                      "key was exported once, with its last value (as JSON parsers read it)")

    def tables_written(self, written: list[Written], *, primary: str) -> list[Path]:
        """A note per table, one more when there are several; returns every file."""
        for table in written:
            self.info(codes.EXPORT_TABLES, f"table {table.table}: {table.items} items in "
                      + ", ".join(p.name for p in table.files))
            if table.cells_cut:
                self.warn(codes.CELLS_TRUNCATED, f"table {table.table}: {table.cells_cut} cell(s) held more text "
                          "than the format allows (XLSX: 32,767 characters) and were cut there; the CSV, TSV and "
                          "JSON formats keep them whole")
        if len(written) > 1:
            self.info(codes.EXPORT_TABLES, "the WARCs hold more than one kind of item "
                      f"({', '.join(t.table for t in written)}): one table each, {primary} "
                      "in the files without a table name")
        return [f for table in written for f in table.files]
