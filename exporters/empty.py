"""Why an export has nothing to export, in one line that names what to check.

An export that writes no item never passes for a success: no WARC of the collection (`no_warcs`), or WARCs
holding nothing of the export's type, nothing by the seeds' uids, only error answers or empty pages
(`export_empty`) end in `completed failure`. Only a date range the user asked for that happens to hold no
item, or a current state whose every item was deleted at the source, is a success with a warning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from swath.exporters.planning import Reads
from swath.exporters.records import Tally
from swath.exporters.warc_index import WarcIndex
from swath.messages.model import ExportStart


def no_warcs(start: ExportStart, *, index: WarcIndex, data_root: Path) -> str:
    """The reason for an export that found no WARC to read (code no_warcs)."""
    root = Path(data_root).resolve()
    if not start.collection_id:
        return f"no WARC under the data root {root}; check SWATH_DATA_ROOT (seed exports read every WARC there)"
    dirs = index.collection_dirs(start.collection_id)
    if not dirs:
        return (f"no WARC of collection {start.collection_id} under {root}: no directory there is named by that id; "
                "check the collection id and SWATH_DATA_ROOT")
    return (f"collection {start.collection_id} has no WARC on disk under {', '.join(map(str, dirs))}; "
            "has it been harvested (or its WARCs moved)? Check its harvests' status")


@dataclass(frozen=True)
class Empty:
    message: str
    fail: bool  # False only where the user asked for what turned out empty (a date range), or all was deleted


def why_empty(start: ExportStart, tally: Tally, *, warcs: int, reads: Reads, skipped: int,
              warcs_outside: int = 0) -> Empty:
    """Why an export that read `warcs` WARCs wrote no item (code export_empty); `skipped`: the unreadable
    bodies and lines it skipped as asked; `warcs_outside`: WARCs the index left out by their harvest dates."""
    where = (f"the {warcs} WARC(s) of collection {start.collection_id}" if start.collection_id
             else f"the {warcs} WARC(s) under the data root")
    kind = f"{start.type} item"
    if warcs_outside and not reads.refs:
        scope = f"collection {start.collection_id}" if start.collection_id else "the seeds"
        return Empty(f"no {kind} in the asked date range: the WARC index holds {warcs_outside} WARC(s) of {scope}, "
                     "all harvested outside it; the export is empty", fail=False)
    if tally.by_date or (reads.outside_dates and not reads.refs):
        outside = (f"{tally.by_date} {kind}(s) of {where} have their item date outside it (or none)" if tally.by_date
                   else f"the {reads.outside_dates} record(s) of {where} were all harvested outside it")
        return Empty(f"no {kind} in the asked date range: {outside}; the export is empty", fail=False)
    if tally.by_uid:
        uids = ", ".join(sorted({s.uid for s in start.seeds if s.uid}))
        return Empty(f"none of the {tally.by_uid} {kind}(s) of {where} is by the seeds' uid(s) {uids}; "
                     "check the seeds' uid (user id, owner NSID, blog name)", fail=True)
    if tally.tombstones:  # no filter left anything out, so a tombstone superseded every copy
        return Empty(f"every {kind} of {where} was deleted at the source: the current state is empty", fail=False)
    if skipped:
        return Empty(f"every {kind} body of {where} that held any was unreadable ({skipped} skipped as asked); "
                     "see the item_unreadable warnings", fail=True)
    if tally.errors and not tally.matched:
        return Empty(f"{where} hold {tally.errors} {start.type} answer(s), every one an API error (HTTP status "
                     "other than 2xx); check the harvests' statuses and credentials", fail=True)
    if tally.matched:
        return Empty(f"{where} hold {tally.matched} {start.type} response(s) but no {kind} in them (empty "
                     "result pages); check the harvests' seeds and statuses", fail=True)
    return Empty(f"{where} hold no {kind}s ({len(reads.refs)} record(s) of other kinds, API error answers or "
                 "none); check that the export type matches the collection's harvest type", fail=True)
