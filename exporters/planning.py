"""Which records an export reads: the WARCs (select_warcs), the records in them and what the fact records say
(plan_reads -> records.Plan, and the Reads around it).

The WARCs' record offsets come from their scans (scans.py, in the reader processes when there are any); records
outside the harvest dates are left out; dedupe reads newest first (the first copy dedupe meets is the latest).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Protocol

from swath.core.paths import stays_inside
from swath.core.warc_files import PathOutsideStore, is_object_url, open_warc, stat_warc
from swath.exporters.records import Plan, ignore_cut, sources_for
from swath.exporters.scans import Scan
from swath.exporters.table import Table
from swath.exporters.warc_index import Selected, WarcIndex
from swath.exporters.warc_reader import RecordRef, read_at
from swath.messages import codes
from swath.messages.model import ExportStart


class Notes(Protocol):
    """Where planning reports (base.Report)."""

    def info(self, code: str, message: str) -> None: ...

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
    outside_dates: int = 0  # records left out by the harvest date filter


def select_warcs(start: ExportStart, *, index: WarcIndex, report: Notes, data_root: Path) -> Selected:
    """The WARCs to read, in the index's (path) order, with the index's notes; one missing from disk is a
    warning, not a failure, and so is one whose real path is outside the data root (a planted link: never read)."""
    selected = index.select(start)
    for code, message in selected.infos:
        report.info(code, message)
    for code, message in selected.warnings:
        report.warn(code, message)
    present: list[Path | str] = []
    for warc in selected.warcs:
        if is_object_url(warc):
            try:
                found = stat_warc(warc) is not None
            except PathOutsideStore as exc:
                report.warn(exc.code, exc.message)
                continue
            if found:
                present.append(warc)
            else:
                report.warn(codes.WARC_MISSING, f"{warc} is indexed but not in the store; exported the others")
        elif not stays_inside(data_root, Path(warc)):
            report.warn(codes.PATH_OUTSIDE_DATA_ROOT, f"{warc} leads outside the data root {data_root}; not "
                        "exported (remove the link)")
        elif Path(warc).is_file():
            present.append(warc)
        else:
            report.warn(codes.WARC_MISSING, f"{warc} is indexed but not on disk; exported the others")
    return Selected(present, outside_dates=selected.outside_dates)


def plan_reads(start: ExportStart, warcs: list[Path | str], *, dedupe: bool, scanner: Scanner, report: Notes,
               cache_root: Path) -> Reads:
    """The records to read and the Plan to read them by; dedupe reads the newest first."""
    refs, fact_refs, warc_ends, outside = _refs(start, warcs, scanner=scanner, report=report, cache_root=cache_root,
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
    return Reads(plan=plan, refs=refs, warc_ends=warc_ends, tables=tables, outside_dates=outside)


def _harvest_date_ok(start: ExportStart, date: dt.datetime) -> bool:
    return not ((start.harvest_date_start and date < start.harvest_date_start)
                or (start.harvest_date_end and date > start.harvest_date_end))


def _refs(start: ExportStart, warcs: list[Path | str], *, scanner: Scanner, report: Notes, cache_root: Path,
          newest_first: bool) -> tuple[list[RecordRef], list[RecordRef], list[int], int]:
    """The records to read, in export order: file order, or (dedupe) newest harvest first, so dedupe
    keeps the first copy it meets, which is the latest, remembering nothing but ids. Then the fact
    records, oldest first, where each WARC's item records end (file order), and how many records the
    harvest dates left out."""
    refs: list[RecordRef] = []
    outside = 0
    facts: list[RecordRef] = []
    ends = []
    for scan in scanner.scans([str(w) for w in warcs], start.type, cache_root=cache_root):
        for message in scan.warnings:
            report.warn(codes.WARC_TRUNCATED, message)
        for r in scan.refs:
            if not _harvest_date_ok(start, r.date):
                outside += r.item  # fact-only metadata records are no items
                continue
            if r.item:
                refs.append(r)
            if r.fact:
                facts.append(r)
        ends.append(len(refs))
    # WARC-Date has whole seconds: ties between files go to the file written last (then by name).
    rank = {str(w): n for n, w in enumerate(sorted(warcs, key=lambda w: (_mtime_ns(w), str(w))))}

    def order(r: RecordRef) -> tuple[dt.datetime, int, int]:
        return r.date, rank[r.warc], r.offset

    if newest_first:
        refs.sort(key=order, reverse=True)
    facts.sort(key=order)
    return refs, facts, ends, outside


def _mtime_ns(warc: Path | str) -> int:
    if is_object_url(warc):
        return 0  # an object is written once: its name orders it (no HEAD asked for nothing)
    found = stat_warc(warc)
    return found.mtime_ns if found is not None else 0


def _facts(export_type: str, refs: list[RecordRef], report: Notes) -> dict[str, Any]:
    """What the fact records say, read oldest first (see items.Source.collect)."""
    facts: dict[str, Any] = {}
    if not refs:
        return facts
    sources = [s for s in sources_for(export_type, {}) if s.has_facts]
    handles: dict[str, IO[bytes]] = {}
    try:
        for ref in refs:
            fh = handles.get(ref.warc) or handles.setdefault(ref.warc, open_warc(ref.warc))
            resp = read_at(fh, ref, on_truncated=ignore_cut)
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
