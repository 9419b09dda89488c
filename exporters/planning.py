"""Which records an export reads: its WARCs (select_warcs), then the records in them, in which order, and
what the fact records say (plan_reads).

The WARCs' record offsets come from their scans (scans.py, in the reader processes when there are any);
records outside the harvest dates are left out; dedupe reads newest first. Fact records are read here,
oldest first, into the Plan every reader gets.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from swath.exporters.records import Plan, sources_for
from swath.exporters.scans import Scan
from swath.exporters.table import Table
from swath.exporters.warc_index import WarcIndex
from swath.exporters.warc_reader import RecordRef, read_at
from swath.messages import codes
from swath.messages.model import ExportStart


class Notes(Protocol):
    """Where planning reports (report.Report)."""

    def warn(self, code: str, message: str) -> None: ...

    def tick(self) -> None:
        """Between pieces of work: raises JobInterrupted once the export is asked to stop."""


class Scanner(Protocol):
    """What planning needs of the reader processes (reader.Readers)."""

    def scans(self, warcs: list[str], export_type: str, *, cache_root: Path | None) -> Iterator[Scan]: ...


@dataclass(frozen=True, kw_only=True)
class Reads:
    plan: Plan
    refs: list[RecordRef]  # the item records, in export order
    warc_ends: list[int]  # per WARC (file order), the item records up to its end: progress counts WARCs by it
    tables: dict[str, Table]  # by name, as the facts configured them: the outputs' headers


def select_warcs(start: ExportStart, *, index: WarcIndex, report: Notes) -> list[Path]:
    """The WARCs to read, in the index's (path) order; one missing from disk is a warning, not a failure."""
    warcs = index.warcs_for(start.collection_id) if start.collection_id else index.all_warcs()
    present = []
    for warc in warcs:
        if warc.is_file():
            present.append(warc)
        else:
            report.warn(codes.WARC_MISSING, f"{warc} is indexed but not on disk; exported the others")
    return present


def plan_reads(start: ExportStart, warcs: list[Path], *, dedupe: bool, scanner: Scanner, report: Notes,
               cache_root: Path) -> Reads:
    """The records to read and the Plan to read them by; dedupe reads the newest first."""
    refs, fact_refs, warc_ends = _refs(start, warcs, scanner=scanner, report=report, cache_root=cache_root,
                                       newest_first=dedupe)
    facts = _facts(start.type, fact_refs, report)
    tables: dict[str, Table] = {}
    for source in sources_for(start.type, facts):
        tables.setdefault(source.table.name, source.table)  # the first source of a table names its columns
    plan = Plan(
        type=start.type, format=start.format,
        uids=frozenset(s.uid for s in start.seeds if s.uid) if start.seeds else None,
        item_date_start=start.item_date_start, item_date_end=start.item_date_end, newest_first=dedupe,
        facts=facts,
    )
    return Reads(plan=plan, refs=refs, warc_ends=warc_ends, tables=tables)


def _harvest_date_ok(start: ExportStart, date: dt.datetime) -> bool:
    return not ((start.harvest_date_start and date < start.harvest_date_start)
                or (start.harvest_date_end and date > start.harvest_date_end))


def _refs(start: ExportStart, warcs: list[Path], *, scanner: Scanner, report: Notes, cache_root: Path,
          newest_first: bool) -> tuple[list[RecordRef], list[RecordRef], list[int]]:
    """The records to read, in export order: file order, or (dedupe) newest harvest first, so dedupe
    keeps the first copy it meets, which is the latest, remembering nothing but ids. Then the fact
    records, oldest first, and where each WARC's item records end (file order)."""
    refs: list[RecordRef] = []
    facts: list[RecordRef] = []
    ends = []
    for scan in scanner.scans([str(w) for w in warcs], start.type, cache_root=cache_root):
        for message in scan.warnings:
            report.warn(codes.WARC_TRUNCATED, message)
        for r in scan.refs:
            if not _harvest_date_ok(start, r.date):
                continue
            if r.item:
                refs.append(r)
            if r.fact:
                facts.append(r)
        ends.append(len(refs))
    # WARC-Date has whole seconds: ties between files go to the file written last (then by name).
    rank = {str(w): n for n, w in enumerate(sorted(warcs, key=lambda w: (w.stat().st_mtime_ns, str(w))))}

    def order(r: RecordRef) -> tuple[dt.datetime, int, int]:
        return r.date, rank[r.warc], r.offset

    if newest_first:
        refs.sort(key=order, reverse=True)
    facts.sort(key=order)
    return refs, facts, ends


def _ignore_cut(warc: str, message: str) -> None:
    """The scan warned about any cut already."""


def _facts(export_type: str, refs: list[RecordRef], report: Notes) -> dict[str, Any]:
    """What the fact records say, read oldest first (see items.Source.collect)."""
    facts: dict[str, Any] = {}
    if not refs:
        return facts
    sources = [s for s in sources_for(export_type, {}) if s.has_facts]
    handles: dict[str, IO[bytes]] = {}
    try:
        for ref in refs:
            fh = handles.get(ref.warc) or handles.setdefault(ref.warc, open(ref.warc, "rb"))
            resp = read_at(fh, ref, on_truncated=_ignore_cut)
            if resp is None:
                continue
            for source in sources:
                if source.is_fact(resp.url, resp.content_type):
                    source.collect(resp, facts)
            report.tick()
    finally:
        for fh in handles.values():
            fh.close()
    return facts
