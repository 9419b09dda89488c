"""Step 1 of an export: the WARCs it reads, those of its collection (or all, for seeds) that are on disk."""

from __future__ import annotations

from pathlib import Path

from swath.exporters.report import Report
from swath.exporters.warc_index import WarcIndex
from swath.messages import codes
from swath.messages.model import ExportStart


def select_warcs(start: ExportStart, *, index: WarcIndex, report: Report) -> list[Path]:
    """The WARCs to read, in the index's (path) order; one missing from disk is a warning, not a failure."""
    warcs = index.warcs_for(start.collection_id) if start.collection_id else index.all_warcs()
    present = []
    for warc in warcs:
        if warc.is_file():
            present.append(warc)
        else:
            report.warn(codes.WARC_MISSING, f"{warc} is indexed but not on disk; exported the others")
    report.warcs_total = len(present)
    return present
