"""The export job: export.start.<platform>.<type> in, files and export.status messages out.

run_export is the list of steps, each in a module of its own; as in Scrapy's feed exports, which items
(selection, planning, records, rows/dedupe), which format (writers.py) and where (output.py) stay apart:

    request.accept/resolve   the message: type, format, folder inside the data root
    selection.select_warcs   1. the WARCs of the collection (or all, for seeds) on disk
    planning.plan_reads      2. their records (scans.py), harvest dates, order, facts -> a Plan
    reader.Readers.batches   3. records -> Batches of encoded items (records.RecordReader, in reader processes
                                when the input is big)
    rows.write_rows          4. Batches -> deduped rows in the outputs (output.Outputs)
    report                   the notes, progress and every export.status
"""

from __future__ import annotations

from typing import Any

from swath.core.jobs import JobContext, JobInterrupted
from swath.exporters.output import Outputs
from swath.exporters.planning import plan_reads
from swath.exporters.reader import Readers, processes_for
from swath.exporters.report import Report
from swath.exporters.request import ExportFailed, accept, export_id, resolve
from swath.exporters.rows import write_rows
from swath.exporters.selection import select_warcs
from swath.exporters.warc_index import ScanIndex, WarcIndex
from swath.messages import codes


def run_export(body: dict[str, Any], *, routing_key: str, ctx: JobContext, index: WarcIndex | None = None,
               workers: int | None = None) -> None:
    """swath.core.jobs.Job for every export type (see exporters.registry).

    `index` and `workers` (reader processes; None: SWATH_EXPORT_WORKERS, else by input size) are for tests
    and tools.
    """
    report = Report(export_id=export_id(body), routing_key=routing_key, ctx=ctx)
    start = accept(body, report)
    if start is None:
        return
    data_root = ctx.config.data_root
    outputs: Outputs | None = None
    try:
        report.running()
        request = resolve(start, data_root=data_root)
        warcs = select_warcs(start, index=index or ScanIndex(data_root=data_root), report=report)
        with Readers(processes_for(warcs, asked=workers, config=ctx.config)) as readers:
            reads = plan_reads(request, warcs, scanner=readers, report=report, cache_root=data_root)
            outputs = Outputs(directory=request.directory, export_id=start.id, writer_cls=request.writer_cls,
                              segment_size=start.segment_size, tables=reads.tables,
                              primary=request.export_type.primary_table)
            bad_lines = write_rows(readers.batches(reads.plan, reads.refs), outputs=outputs, dedupe=request.dedupe,
                                   spill_dir=request.directory, report=report, warc_ends=reads.warc_ends)
        report.unreadable(bad_lines)
        files = report.tables_written(outputs.commit(), primary=outputs.primary)
    except ExportFailed as exc:
        _abort(outputs)
        report.failed(exc.code, str(exc))
        return
    except Exception as exc:  # noqa: BLE001 - every failure must end in a status
        _abort(outputs)
        _end_early(exc, report=report, ctx=ctx)
        return
    report.succeeded(files)


def _abort(outputs: Outputs | None) -> None:
    if outputs is not None:
        outputs.abort()


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
