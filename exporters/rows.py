"""Steps 3-4 of an export: the batches the readers give become rows in the outputs, deduped, in order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Protocol, cast

from swath.exporters.dedupe import SeenIds
from swath.exporters.records import Batch, Payload
from swath.exporters.report import Report


class RowSink(Protocol):
    """Where rows go (output.Outputs)."""

    def write(self, table: str, payloads: list[Payload]) -> None: ...


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


def write_rows(batches: Iterable[Batch], *, outputs: RowSink, dedupe: bool, spill_dir: Path, report: Report,
               warc_ends: list[int]) -> dict[str, int]:
    """Write every batch's rows; returns per WARC the lines that were not JSON. `warc_ends`: where each
    WARC's records end (planning.Reads), for the progress count."""
    seen = SeenIds(spill_dir=spill_dir) if dedupe else None
    bad_lines: dict[str, int] = {}
    records = 0
    try:
        for batch in batches:
            for table, payloads in rows(batch, seen):
                outputs.write(table, payloads)
                report.items += len(payloads)
            for warc, n in batch.bad_lines.items():
                bad_lines[warc] = bad_lines.get(warc, 0) + n
            records += batch.records
            report.warcs_done = sum(1 for end in warc_ends if end <= records)
            report.tick()
    finally:
        if seen is not None:
            seen.close()
    return bad_lines
