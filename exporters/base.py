"""The export job: export.start.<platform>.<type> in, files and export.status messages out.

Three separate pieces, as in Scrapy's feed exports: which items (WARC index, sources, filters,
dedupe), which format (writers.py) and where (output.py, atomic segment files).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from swath.core.jobs import JobContext, JobInterrupted
from swath.core.paths import PathOutsideDataRoot, resolve_inside
from swath.exporters import registry
from swath.exporters.dedupe import SeenIds
from swath.exporters.items import Source
from swath.exporters.output import SegmentedOutput
from swath.exporters.reader import Batch, Plan, Readers, default_workers, sources_for
from swath.exporters.warc_index import ScanIndex, WarcIndex
from swath.exporters.warc_reader import RecordRef, read_at
from swath.exporters.writers import FORMATS, Writer
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


class ExportFailed(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Notes:
    infos: list[Note] = field(default_factory=list)
    warnings: list[Note] = field(default_factory=list)
    errors: list[Note] = field(default_factory=list)


def run_export(body: dict[str, Any], *, routing_key: str, ctx: JobContext, index: WarcIndex | None = None,
               workers: int | None = None) -> None:
    """swath.core.jobs.Job for every export type (see exporters.registry).

    `index` and `workers` (processes; None: by input size) are for tests and tools.
    """
    Export(body=body, routing_key=routing_key, ctx=ctx, index=index, workers=workers).run()


class Export:
    def __init__(self, *, body: dict[str, Any], routing_key: str, ctx: JobContext,
                 index: WarcIndex | None = None, workers: int | None = None) -> None:
        self.body = body
        self.workers = workers
        self.ctx = ctx
        self.status_key = str(parse(routing_key).status_key())
        self.origin = Origin(service=ctx.service, host=ctx.config.host, instance=ctx.instance)
        self.date_started = now_iso()
        self.notes = _Notes()
        self.index = index
        self.items_done = 0
        self.warcs_done = 0
        self.warcs_total = 0
        self._last_status = time.monotonic()
        self._outputs: dict[str, SegmentedOutput] = {}
        self._warc_ends: list[int] = []

    # --- status ---
    def _publish(self, status: str, **extra: Any) -> None:
        msg = ExportStatus(
            id=self.body["id"], status=status, origin=self.origin, date_started=self.date_started,
            date_ended=None if status == RUNNING else now_iso(), infos=list(self.notes.infos),
            warnings=list(self.notes.warnings), errors=list(self.notes.errors), extra=extra,
        )
        self.ctx.publish(self.status_key, msg.to_dict())

    def _progress(self) -> dict[str, Any]:
        return {"progress": {"items": self.items_done, "warcs_done": self.warcs_done, "warcs_total": self.warcs_total}}

    def _tick(self) -> None:
        if self.ctx.stop.is_set():
            raise JobInterrupted(f"export {self.body['id']} interrupted")
        now = time.monotonic()
        if now - self._last_status >= self.ctx.config.status_interval:
            self._last_status = now
            self._publish(RUNNING, **self._progress())
            self.ctx.progress(f"{self.items_done} items, {self.warcs_done}/{self.warcs_total} WARCs")

    def warn(self, code: str, message: str) -> None:
        self.notes.warnings.append(Note(code, message))
        self.ctx.log.warning("%s: %s", code, message)

    # --- the job ---
    def run(self) -> None:
        body = self.body
        # SFM asks for exactly one of seeds/collection: a failure status, not a dead letter.
        if isinstance(body, dict) and isinstance(body.get("id"), str) and body["id"]:
            if ("seeds" in body) == ("collection" in body):
                self.notes.errors.append(Note(codes.BAD_REQUEST, "an export needs exactly one of seeds or collection"))
                self._publish(COMPLETED_FAILURE)
                return
        start = ExportStart.from_dict(body)  # InvalidMessage: the runtime dead-letters it
        try:
            self._publish(RUNNING, **self._progress())
            files = self._export(start)
        except ExportFailed as exc:
            self._abort()
            self.notes.errors.append(Note(exc.code, str(exc)))
            self._publish(COMPLETED_FAILURE)
            return
        except Exception as exc:  # noqa: BLE001 - every failure must end in a status
            self._abort()
            # a reader broken by the same Ctrl-C/SIGTERM that stopped the export is part of the stop, not a bug
            if not isinstance(exc, JobInterrupted) and not self.ctx.stop.is_set():
                self.ctx.log.exception("export %s failed", start.id)
                self.notes.errors.append(Note(codes.UNKNOWN_ERROR, f"{type(exc).__name__}: {exc}"))
                self._publish(COMPLETED_FAILURE)
                return
            if self.ctx.shutdown.is_set():  # redelivered and redone from the start after the restart
                raise exc if isinstance(exc, JobInterrupted) else JobInterrupted(f"export {start.id} interrupted")
            self.notes.errors.append(Note(codes.UNKNOWN_ERROR, "export stopped before it finished; no files kept"))
            self._publish(COMPLETED_FAILURE)
            return
        self._publish(COMPLETED_SUCCESS, files=[str(f) for f in files], items=self.items_done)

    def _abort(self) -> None:
        for out in self._outputs.values():
            out.abort()

    def _export(self, start: ExportStart) -> list[Path]:
        try:
            export_type = registry.lookup(start.type)
        except registry.UnknownExportType:
            raise ExportFailed(codes.UNKNOWN_TYPE, f"no exporter for type {start.type!r}; "
                               f"known: {', '.join(registry.export_types())}") from None
        writer_cls = FORMATS.get(start.format)
        if writer_cls is None:
            raise ExportFailed(codes.UNSUPPORTED_EXPORT_FORMAT,
                               f"format {start.format!r} is not one of {', '.join(FORMATS)}")
        data_root = self.ctx.config.data_root
        try:
            directory = resolve_inside(data_root, start.path)
        except PathOutsideDataRoot as exc:
            raise ExportFailed(codes.PATH_OUTSIDE_DATA_ROOT, str(exc)) from None
        directory.mkdir(parents=True, exist_ok=True)

        index = self.index or ScanIndex(data_root=data_root)
        warcs = index.warcs_for(start.collection_id) if start.collection_id else index.all_warcs()
        present = []
        for warc in warcs:
            if warc.is_file():
                present.append(warc)
            else:
                self.warn(codes.WARC_MISSING, f"{warc} is indexed but not on disk; exported the others")
        self.warcs_total = len(present)

        # Current-state tables (datasets, LRs, Xesam payloads) always keep only the latest copy of an item.
        dedupe = start.dedupe or export_type.current_state
        workers = self.workers or self.ctx.config.export_workers or default_workers(sum(p.stat().st_size for p in present))
        with Readers(workers) as readers:
            refs, fact_refs = self._refs(start, present, readers, newest_first=dedupe)
            facts = self._facts(start.type, fact_refs)
            sources = sources_for(start.type, facts)
            plan = Plan(
                type=start.type, format=start.format,
                uids=frozenset(s.uid for s in start.seeds if s.uid) if start.seeds else None,
                item_date_start=start.item_date_start, item_date_end=start.item_date_end, newest_first=dedupe,
                facts=facts,
            )
            seen = SeenIds(spill_dir=directory) if dedupe else None
            bad_lines: dict[str, int] = {}
            records = 0
            try:
                for batch in readers.batches(plan, refs):
                    self._write_batch(batch, seen, lambda table: self._output(table, export_type, sources, start,
                                                                              directory, writer_cls))
                    for warc, n in batch.bad_lines.items():
                        bad_lines[warc] = bad_lines.get(warc, 0) + n
                    records += batch.records
                    self.warcs_done = sum(1 for w in self._warc_ends if w <= records)
                    self._tick()
            finally:
                if seen is not None:
                    seen.close()
        for warc, n in bad_lines.items():
            self.warn(codes.ITEM_UNREADABLE, f"{warc}: {n} stream line(s) or bodies were not JSON (e.g. a stream "
                      "cut mid-line); skipped")
        # The primary table always gets its file, even when nothing matched.
        self._output(export_type.primary_table, export_type, sources, start, directory, writer_cls)
        files: list[Path] = []
        for name, out in self._outputs.items():
            out.finish()
        for name, out in self._outputs.items():
            written = out.commit()
            files.extend(written)
            self.notes.infos.append(Note(codes.EXPORT_TABLES, f"table {name}: {out.count} items in "
                                         + ", ".join(p.name for p in written)))
        if len(self._outputs) > 1:
            self.notes.infos.append(Note(codes.EXPORT_TABLES, "the WARCs hold more than one kind of item "
                                         f"({', '.join(self._outputs)}): one table each, {export_type.primary_table} "
                                         "in the files without a table name"))
        return files

    def _write_batch(self, batch: Batch, seen: SeenIds | None, output: Callable[[str], SegmentedOutput]) -> None:
        """Dedupe and write a batch; a batch of one table (the usual case) in one write."""
        table = batch.table
        if seen is None:
            fresh = None
        elif table is not None:
            fresh = seen.add_keys(table, batch.keys)
        else:
            fresh = [seen.add_keys(t, [k]) is None for t, k in zip(batch.tables, batch.keys)]
        # Repeats and tombstones are left out (a tombstone's key is remembered, so older copies stay out).
        if table is not None:
            payloads = batch.payloads
            if fresh is not None:
                payloads = [p for p, new in zip(payloads, fresh) if new]
            if batch.tombstones:
                payloads = [p for p in payloads if p is not None]
            output(table).write_many(payloads)
            self.items_done += len(payloads)
            return
        for n, (table, payload) in enumerate(zip(batch.tables, batch.payloads)):
            if (fresh is not None and not fresh[n]) or payload is None:
                continue
            output(table).write(payload)
            self.items_done += 1

    @staticmethod
    def _table(name: str, sources: list[Source]):
        for s in sources:
            if s.table.name == name:
                return s.table
        raise KeyError(name)

    def _output(self, table: str, export_type, sources, start: ExportStart, directory: Path,
                writer_cls: type[Writer]) -> SegmentedOutput:
        out = self._outputs.get(table)
        if out is None:
            out = SegmentedOutput(
                directory=directory, export_id=start.id,
                table=None if table == export_type.primary_table else table, writer_cls=writer_cls,
                headers=self._table(table, sources).headers, segment_size=start.segment_size,
            )
            self._outputs[table] = out
        return out

    # --- which records ---
    def _harvest_date_ok(self, start: ExportStart, date) -> bool:
        return not ((start.harvest_date_start and date < start.harvest_date_start)
                    or (start.harvest_date_end and date > start.harvest_date_end))

    def _refs(self, start: ExportStart, warcs: list[Path], readers: Readers, *, newest_first: bool
              ) -> tuple[list[RecordRef], list[RecordRef]]:
        """The records to read, in export order: file order, or (dedupe) newest harvest first, so dedupe
        keeps the first copy it meets, which is the latest, remembering nothing but ids. Then the fact
        records, oldest first."""
        refs: list[RecordRef] = []
        facts: list[RecordRef] = []
        ends = []
        for scan in readers.scans([str(w) for w in warcs], start.type, cache_root=self.ctx.config.data_root):
            for message in scan.warnings:
                self.warn(codes.WARC_TRUNCATED, message)
            for r in scan.refs:
                if not self._harvest_date_ok(start, r.date):
                    continue
                if r.item:
                    refs.append(r)
                if r.fact:
                    facts.append(r)
            ends.append(len(refs))
        self._warc_ends = ends  # progress: records read -> WARCs done (file order)
        # WARC-Date has whole seconds: ties between files go to the file written last (then by name).
        rank = {str(w): n for n, w in enumerate(sorted(warcs, key=lambda w: (w.stat().st_mtime_ns, str(w))))}

        def order(r: RecordRef) -> tuple:
            return r.date, rank[r.warc], r.offset

        if newest_first:
            refs.sort(key=order, reverse=True)
        facts.sort(key=order)
        return refs, facts

    def _facts(self, export_type: str, refs: list[RecordRef]) -> dict[str, Any]:
        """What the fact records say, read oldest first (see items.Source.collect)."""
        facts: dict[str, Any] = {}
        if not refs:
            return facts
        sources = [s for s in sources_for(export_type, {}) if s.has_facts]
        handles: dict[str, Any] = {}
        try:
            for ref in refs:
                fh = handles.get(ref.warc) or handles.setdefault(ref.warc, open(ref.warc, "rb"))
                resp = read_at(fh, ref, on_truncated=lambda warc, message: None)  # the scan warned already
                if resp is None:
                    continue
                for source in sources:
                    if source.is_fact(resp.url, resp.content_type):
                        source.collect(resp, facts)
                self._tick()
        finally:
            for fh in handles.values():
                fh.close()
        return facts
