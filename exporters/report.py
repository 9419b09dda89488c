"""What an export tells the outside world: its notes, its progress and its export.status messages."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from swath.core.jobs import JobContext, JobInterrupted
from swath.exporters.output import Written
from swath.messages import codes
from swath.messages.model import COMPLETED_FAILURE, COMPLETED_SUCCESS, RUNNING, ExportStatus, Note, Origin, now_iso
from swath.messages.routing import parse


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
        self._last_status = time.monotonic()

    def _publish(self, status: str, **extra: Any) -> None:
        msg = ExportStatus(
            id=self.export_id, status=status, origin=self.origin, date_started=self.date_started,
            date_ended=None if status == RUNNING else now_iso(), infos=list(self.infos),
            warnings=list(self.warnings), errors=list(self.errors), extra=extra,
        )
        self.ctx.publish(self.status_key, msg.to_dict())

    def _progress(self) -> dict[str, Any]:
        return {"progress": {"items": self.items, "warcs_done": self.warcs_done, "warcs_total": self.warcs_total}}

    # --- notes ---
    def info(self, code: str, message: str) -> None:
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
        if now - self._last_status >= self.ctx.config.status_interval:
            self._last_status = now
            self.running()
            self.ctx.progress(f"{self.items} items, {self.warcs_done}/{self.warcs_total} WARCs")

    def succeeded(self, files: list[Path]) -> None:
        self._publish(COMPLETED_SUCCESS, files=[str(f) for f in files], items=self.items)

    def failed(self, code: str, message: str) -> None:
        self.errors.append(Note(code, message))
        self._publish(COMPLETED_FAILURE)

    # --- the summary at the end ---
    def unreadable(self, bad_lines: dict[str, int]) -> None:
        for warc, n in bad_lines.items():
            self.warn(codes.ITEM_UNREADABLE, f"{warc}: {n} stream line(s) or bodies were not JSON (e.g. a stream "
                      "cut mid-line); skipped")

    def tables_written(self, written: list[Written], *, primary: str) -> list[Path]:
        """A note per table, one more when there are several; returns every file."""
        for table in written:
            self.info(codes.EXPORT_TABLES, f"table {table.table}: {table.items} items in "
                      + ", ".join(p.name for p in table.files))
        if len(written) > 1:
            self.info(codes.EXPORT_TABLES, "the WARCs hold more than one kind of item "
                      f"({', '.join(t.table for t in written)}): one table each, {primary} "
                      "in the files without a table name")
        return [f for table in written for f in table.files]
