"""`swath sfm import`: an SFM site's rows (swath/sfm_import.py) brought into swath's store, keyed on SFM's ids
so a second run changes nothing. Collection sets keep their ids and groups; each collection becomes a harvest
source with the collection's id, its active seeds, options, schedule and credential (sealed); harvests become
jobs (with their stats by day); WARCs whose file matches sfm-ui's row (swath/sfm_warcs.py) enter the WARC index.
Collections of retired or unknown types are skipped and counted; their WARCs are still indexed, so they export."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.core.jsontypes import JSON, JSONObject
from swath.core.paths import safe_id
from swath.harvesters.registry import UnknownHarvestType, lookup
from swath.messages import codes, routing, settings
from swath.requester import CREDENTIAL_NAME, STORED
from swath.scheduler import parse_schedule
from swath.sfm_import import SfmCollection, SfmCollectionSet, SfmHarvest, SfmSeed, SfmWarc
from swath.sfm_warcs import WarcProblem, check_warc
from swath.store import Store, monitor_repo, repo, web_repo
from swath.store.models import (
    ACCEPTED,
    CANCELLED,
    FAILURE,
    PENDING,
    SUCCESS,
    Job,
    Source,
    Warc,
    as_utc,
    naive_utc,
    utcnow,
)
from swath.store.secrets import SecretBox
from swath.store.warc_index import relative_path
from swath.store.web_models import CollectionSet, Group

WHO = "sfm import"  # the change history's user for what the import made
MAX_SOURCE_ID = 32  # Source.id's length: sfm-ui's ids are 32 hex digits
BAD_IDS = "(ids that cannot be folder names)"  # the `skipped` entry of collections whose ids are refused
# sfm-ui's harvest statuses that are final in swath; any other (requested, running, paused...) ended with SFM
_FINAL = {SUCCESS: SUCCESS, FAILURE: FAILURE}


class Skipped(TypedDict):
    """The collections of one harvest type not brought over, and why."""

    code: str
    collections: int
    seeds: int
    harvests: int


class Compared(TypedDict):
    """A collection's counts in SFM beside the imported source's."""

    sfm_id: str
    source: str | None
    type: str
    sfm: dict[str, int]
    swath: dict[str, int]
    equal: bool


class ReportView(TypedDict):
    """ImportReport as `swath sfm import` prints it."""

    imported: dict[str, int]
    unchanged: dict[str, int]
    left_out: dict[str, int]
    skipped: dict[str, Skipped]
    warc_problems: list[dict[str, str]]
    pending: list[dict[str, str]]
    collections: list[Compared]
    bad_collection_set_ids: list[str]


@dataclass
class ImportReport:
    imported: Counter[str] = field(default_factory=Counter)
    unchanged: Counter[str] = field(default_factory=Counter)  # there from an earlier run
    left_out: Counter[str] = field(default_factory=Counter)  # inactive seeds: a source's seeds are all harvested
    skipped: dict[str, Skipped] = field(default_factory=dict)  # harvest type -> why, counts
    warc_problems: list[WarcProblem] = field(default_factory=list)
    pending: list[dict[str, str]] = field(default_factory=list)  # sources left pending validation, and why
    collections: list[Compared] = field(default_factory=list)  # SFM's counts beside swath's
    bad_ids: list[str] = field(default_factory=list)  # collection sets whose id cannot be a folder name: skipped

    def as_dict(self) -> ReportView:
        return {"imported": dict(self.imported), "unchanged": dict(self.unchanged),
                "left_out": dict(self.left_out), "skipped": self.skipped,
                "warc_problems": [vars(p) for p in self.warc_problems], "pending": self.pending,
                "collections": self.collections, "bad_collection_set_ids": self.bad_ids}


def bring_over(sets: list[SfmCollectionSet], *, store: Store, config: Config, box: SecretBox,
               progress: Callable[[str], None] = lambda _: None) -> ImportReport:
    """Import the site into `store` in one transaction (all or nothing); WARC files are checked first, each
    told to `progress` (reading a volume's sha1s takes a while)."""
    report = ImportReport()
    warcs = [(c, h, w) for cs in sets for c in cs.collections for h in c.harvests for w in h.warcs]
    with store.session() as s:
        ids = [w.warc_id for *_, w in warcs]
        # in slices: SQLite takes a bounded number of parameters per statement
        indexed = {i for at in range(0, len(ids), 500) for i in s.scalars(select(Warc.id).where(
            Warc.id.in_(ids[at:at + 500])))}
        fresh = {c.collection_id for cs in sets for c in cs.collections} - set(s.scalars(select(Source.id)))
    if any(c.collection_id in fresh and _harvestable(cs, c) is None and _credential_values(c)
           for cs in sets for c in cs.collections):
        box.require("the credentials of SFM's collections")  # before anything is written
    problems = {}
    unread = [w for *_, w in warcs if w.warc_id not in indexed]
    for n, warc in enumerate(unread, 1):
        progress(f"checking SFM's WARCs: {n}/{len(unread)}, {warc.path}")
        if (problem := check_warc(config, warc)) is not None:
            problems[warc.warc_id] = problem
    report.warc_problems = list(problems.values())
    with store.session() as s:
        for cs in sets:
            _bring_set(s, cs, report)
            for collection in cs.collections:
                why = _harvestable(cs, collection)
                if why is None:
                    _bring_collection(s, cs, collection, box, report)
                else:
                    key = collection.harvest_type if why != codes.BAD_REQUEST else BAD_IDS
                    skipped = report.skipped.setdefault(key, Skipped(code=why, collections=0, seeds=0, harvests=0))
                    skipped["collections"] += 1
                    skipped["seeds"] += len(collection.seeds)
                    skipped["harvests"] += len(collection.harvests)
        for collection_set, collection, harvest, warc in ((cs, c, h, w) for cs in sets for c in cs.collections
                                                          for h in c.harvests for w in h.warcs):
            if warc.warc_id in indexed:
                report.unchanged["warcs"] += 1
            elif not _ids_ok(collection_set, collection):
                report.left_out["warcs_of_collections_with_bad_ids"] += 1
            elif warc.warc_id not in problems:
                _index_warc(s, config, collection_set, collection, harvest, warc)
                report.imported["warcs"] += 1
                report.imported["warc_bytes"] += warc.bytes
        s.flush()
        report.collections = [_compare(s, c) for cs in sets for c in cs.collections
                              if _harvestable(cs, c) is None]
    return report


def _ids_ok(cs: SfmCollectionSet, collection: SfmCollection) -> bool:
    """Its ids become folder names and fill the store's columns: one safe path part each, short enough."""
    ids = (cs.collection_set_id, collection.collection_id)
    return len(collection.collection_id) <= MAX_SOURCE_ID and all(safe_id(i) == i and len(i) <= 100 for i in ids)


def _harvestable(cs: SfmCollectionSet, collection: SfmCollection) -> str | None:
    """None when swath harvests the collection's type; else the code saying why it is skipped."""
    if not _ids_ok(cs, collection):
        return codes.BAD_REQUEST
    try:
        lookup(collection.harvest_type)
    except UnknownHarvestType as exc:  # RetiredHarvestType among them: api_retired
        return exc.code
    return None


def _bring_set(s: Session, cs: SfmCollectionSet, report: ImportReport) -> None:
    if safe_id(cs.collection_set_id) != cs.collection_set_id or len(cs.collection_set_id) > 100:
        report.bad_ids.append(cs.collection_set_id)  # its collections are skipped as bad_request too
        return
    if s.get(CollectionSet, cs.collection_set_id) is not None:
        report.unchanged["collection_sets"] += 1
        return
    if s.scalar(select(func.count()).where(Group.name == cs.group)) == 0:
        report.imported["groups"] += 1
    group = web_repo.group_named(s, cs.group, create=True)
    web_repo.add_set(s, set_id=cs.collection_set_id, name=cs.name[:200], description=cs.description or None,
                     group=group)
    report.imported["collection_sets"] += 1


def _bring_collection(s: Session, cs: SfmCollectionSet, c: SfmCollection, box: SecretBox,
                      report: ImportReport) -> None:
    platform = lookup(c.harvest_type).platform
    if s.get(Source, c.collection_id) is not None:
        report.unchanged["sources"] += 1
    else:
        seeds = [_seed(seed) for seed in c.seeds if seed.is_active]
        options, found = _options(c.harvest_options)
        values = _credential_values(c)
        found += settings.problems(c.harvest_type, options=options, seeds=seeds, credentials=values)
        source = repo.create_source(s, source_id=c.collection_id, name=_free_name(s, c), harvest_type=c.harvest_type,
                                    platform=platform, seeds=seeds, options=options,
                                    credentials=dict.fromkeys(values, STORED), secrets=values, box=box,
                                    collection_set_id=cs.collection_set_id, collection_id=c.collection_id)
        why = "; ".join(found) or (None if c.is_active else "inactive in SFM")
        repo.set_validation(s, source, PENDING if why else ACCEPTED, why or "imported from SFM")
        if why:
            report.pending.append({"source": source.name, "reason": why})
        if _scheduled(c):
            expr = _every(c.schedule_minutes or 0)
            schedule, now = parse_schedule("interval", expr), utcnow()
            # on SFM's grid: an interval after its last harvest there, not one more run at once
            last = max((naive_utc(h.date_requested) for h in c.harvests), default=None)
            repo.set_schedule(s, source, kind="interval", expr=expr,
                              next_due=schedule.next_after(last, now) if last else schedule.first_due(now))
            report.imported["schedules"] += 1
        web_repo.log_change(s, set_id=cs.collection_set_id, source_id=source.id, user=WHO, action="import",
                            detail=f"SFM collection {c.collection_id}")
        report.imported["sources"] += 1
        report.imported["seeds"] += len(seeds)
        report.left_out["inactive_seeds"] += len(c.seeds) - len(seeds)
        report.imported["credentials_sealed"] += len(values)
    for harvest in c.harvests:
        if s.get(Job, harvest.harvest_id) is not None:
            report.unchanged["jobs"] += 1
            continue
        s.add(_job(c, harvest, platform))
        report.imported["jobs"] += 1


def _seed(seed: SfmSeed) -> JSONObject:
    """sfm-ui's seed as harvest.start carries it: a JSON token (a search's query) as an object."""
    out: JSONObject = {"id": seed.seed_id}
    if seed.token:
        parsed = _json(seed.token)
        out["token"] = parsed if isinstance(parsed, dict) else seed.token
    if seed.uid:
        out["uid"] = seed.uid
    return out


def _options(text: str) -> tuple[JSONObject, list[str]]:
    parsed = _json(text) if text.strip() else {}
    if isinstance(parsed, dict):
        return parsed, []
    return {}, ["harvest_options: sfm-ui's value is not a JSON object; left out"]


def _credential_values(c: SfmCollection) -> dict[str, str]:
    """The credential's values by name (sfm-ui keeps them as JSON; empty values are not kept)."""
    parsed = _json(c.credential_token)
    if not isinstance(parsed, dict):
        return {}
    return {str(k): v for k, v in parsed.items() if isinstance(v, str) and v and CREDENTIAL_NAME.fullmatch(str(k))}


def _json(text: str) -> JSON:
    try:
        parsed: JSON = orjson.loads(text)
        return parsed
    except orjson.JSONDecodeError:
        return None


def _free_name(s: Session, c: SfmCollection) -> str:
    """The collection's name, unless another source has it: then the name with SFM's id."""
    base = (c.name.strip() or c.collection_id)[:160]
    for name in (base, f"{base} (sfm {c.collection_id})"):
        if s.scalar(select(Source.id).where(Source.name == name)) is None:
            return name
    return c.collection_id


def _scheduled(c: SfmCollection) -> bool:
    """SFM harvested it on a schedule: on, active, an interval, and not past its end date."""
    ended = c.end_date is not None and naive_utc(c.end_date) <= utcnow()
    return c.is_on and c.is_active and bool(c.schedule_minutes) and (c.schedule_minutes or 0) > 0 and not ended


def _every(minutes: int) -> str:
    """sfm-ui's schedule in minutes as an interval: 1440 -> 1d, 60 -> 1h, 30 -> 30m."""
    for unit, size in (("d", 1440), ("h", 60)):
        if minutes % size == 0:
            return f"{minutes // size}{unit}"
    return f"{minutes}m"


def _job(c: SfmCollection, h: SfmHarvest, platform: str) -> Job:
    when = naive_utc(h.date_requested)
    status = _FINAL.get(h.status, CANCELLED)
    return Job(id=h.harvest_id, source_id=c.collection_id, harvest_type=h.harvest_type,
               routing_key=routing.key("harvest_start", platform, h.harvest_type), trigger="sfm_import",
               status=status, created_at=when, published_at=when, updated_at=utcnow(),
               date_started=_iso(h.date_started), date_ended=_iso(h.date_ended),
               warcs_count=h.warcs_count, warcs_bytes=h.warcs_bytes, stats=h.stats,
               infos=[{"code": codes.SFM_IMPORTED, "message": f"imported from SFM; its status there: {h.status}"}])


def _iso(value: dt.datetime | None) -> str | None:
    return as_utc(naive_utc(value)) if value else None


def _index_warc(s: Session, config: Config, cs: SfmCollectionSet, c: SfmCollection, h: SfmHarvest,
                w: SfmWarc) -> None:
    row = monitor_repo.record_warc(s, warc_id=w.warc_id, path=w.path, sha1=w.sha1, size=w.bytes,
                           date_created=_iso(w.date_created) or "", collection_set_id=cs.collection_set_id,
                           collection_id=c.collection_id, harvest_id=h.harvest_id, harvest_type=h.harvest_type)
    row.rel_path = relative_path(w.path, config.harvest_base)


def _compare(s: Session, c: SfmCollection) -> Compared:
    """The collection's counts in SFM beside the imported source's, read back from the store."""
    source = s.get(Source, c.collection_id)
    warcs, size = s.execute(select(func.count(), func.coalesce(func.sum(Warc.bytes), 0))
                            .where(Warc.collection_id == c.collection_id)).one()
    swath = {"seeds": len(source.seeds) if source else 0,
             "harvests": int(s.scalar(select(func.count()).where(Job.source_id == c.collection_id)) or 0),
             "warcs": int(warcs), "warc_bytes": int(size)}
    sfm = {"seeds": sum(seed.is_active for seed in c.seeds), "harvests": len(c.harvests),
           "warcs": sum(len(h.warcs) for h in c.harvests),
           "warc_bytes": sum(w.bytes for h in c.harvests for w in h.warcs)}
    return {"sfm_id": c.collection_id, "source": source.name if source else None, "type": c.harvest_type,
            "sfm": sfm, "swath": swath, "equal": sfm == swath}
