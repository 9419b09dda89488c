"""What the status page shows (`swath dashboard`; the web at /status and /ops), gathered in one pass: store rows
and broker queue depths.

Queue depths come from the RabbitMQ management API when a URL is given, else from passive queue
declares (message and consumer counts of the queues swath knows). Dead-lettered messages are peeked
(got without ack, then returned to the queue when the channel closes), never consumed.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

import pika
import pika.exceptions
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from swath.core.config import Config
from swath.core.masking import masked
from swath.messages.deadletters import DeadLetter
from swath.messages.nodes import amqp_urls
from swath.messages.topology import connection_parameters
from swath.shared.records import JobView, job_dict, source_dict
from swath.store import Store, monitor_repo, repo
from swath.store.models import ACTIVE_STATES, Export, Source, as_utc
from swath.store.repo import AnySelect
from swath.store.web_models import CollectionSet, ExportRequest

PEEK_LIMIT = 10


@dataclass
class Snapshot:
    sources: list[dict[str, object]]
    running: list[JobView]
    recent: list[JobView]
    volume: list[dict[str, object]]
    rejected_total: int
    rejected: list[dict[str, object]]
    exports: list[dict[str, object]] = field(default_factory=list)
    queues: list[dict[str, object]] = field(default_factory=list)
    queues_via: str = ""
    dead_letters: list[dict[str, object]] = field(default_factory=list)
    broker_error: str | None = None
    names: Names | None = None  # for the page; the JSON has the ids
    operator: bool = True  # the whole installation with its broker; False: some collection sets' rows only

    def to_dict(self) -> dict[str, object]:
        """The JSON of /api/status and `--once --json`: masked as every view is (seed URLs lose passwords)."""
        shown: dict[str, object] = {k: v for k, v in self.__dict__.items() if k != "names"}
        return masked(shown)


@dataclass(frozen=True)
class Window:
    """A page of each list that grows with the installation: (offset, limit) of its sources and of its WARC
    volume rows (the web's /status; the dashboard shows them whole)."""

    sources: tuple[int, int]
    volume: tuple[int, int]


def gather(*, config: Config, store: Store, management_url: str | None = None, recent: int = 20,
           sets: set[str] | None = None, window: Window | None = None) -> Snapshot:
    """Everything (`sets` None: an operator's view), or only the rows of the collection sets in `sets`: their
    sources, runs, WARC volume and the exports asked for in them; no queues, dead letters or refused statuses,
    which name other groups' work. With `window`, a page of the sources and of the volume rows."""
    with store.session() as s:
        query = _in_sets(select(Source).where(Source.deleted_at.is_(None)), sets).order_by(
            Source.created_at, Source.name, Source.id)
        listed = list(s.scalars(query if window is None else query.offset(window.sources[0]).limit(window.sources[1])))
        sources = [source_dict(src) for src in listed]
        jobs = repo.list_jobs(s, limit=200, set_ids=sets)
        active = [j for j in jobs if j.status in ACTIVE_STATES]
        done = [j for j in jobs if j.status not in ACTIVE_STATES][:recent]
        files = repo.warcs_of(s, [j.id for j in active + done])
        pages = {} if window is None else {"offset": window.volume[0], "limit": window.volume[1]}
        volume_rows = repo.warc_volume(s, sets=sets, **pages)
        volume = [{"collection_set": a, "collection": b, "warcs": n, "bytes": size} for a, b, n, size in volume_rows]
        shown = repo.list_exports(s, limit=recent) if sets is None else list(s.scalars(
            select(Export).join(ExportRequest, ExportRequest.export_id == Export.id)
            .where(ExportRequest.collection_set_id.in_(sets)).order_by(Export.created_at.desc()).limit(recent)))
        exports = export_rows(s, shown)
        collections: set[str | None] = {b for _a, b, _n, _size in volume_rows}
        named = _named(s, sets, listed, source_ids={j.source_id for j in active + done if j.source_id},
                       collections=collections | {e.collection_id for e in shown})
        set_ids = {src.collection_set_id for src in named}
        names = Names(sets={cs.id: cs.name for cs in s.scalars(select(CollectionSet).where(
            CollectionSet.id.in_(set_ids)))}, sources=named)
        total, rows = monitor_repo.rejected(s) if sets is None else (0, [])
        rejected: list[dict[str, object]] = [{"routing_key": r.routing_key, "code": r.code, "message": r.message}
                                             for r in rows]
    snap = Snapshot(sources=sources, running=[job_dict(j, files[j.id]) for j in active],
                    recent=[job_dict(j, files[j.id]) for j in done], volume=volume, rejected_total=total,
                    rejected=rejected, exports=exports, names=names, operator=sets is None)
    if sets is not None:
        return snap
    try:
        if management_url:
            snap.queues, snap.queues_via = management_queues(management_url, config), "management API"
        else:
            snap.queues, snap.queues_via = passive_queues(config), "passive declares"
        snap.dead_letters = peek_dead_letters(config)
    except (pika.exceptions.AMQPError, OSError, ValueError) as exc:
        snap.broker_error = f"{type(exc).__name__}: {exc}"
    return snap


def _in_sets(query: AnySelect, sets: set[str] | None) -> AnySelect:
    return query if sets is None else query.where(Source.collection_set_id.in_(sets))


def count_rows(store: Store, sets: set[str] | None) -> tuple[int, int]:
    """(live sources, WARC volume rows) of the collection sets in `sets` (None: all): the lists Window pages."""
    with store.session() as s:
        sources = s.scalar(_in_sets(select(func.count()).select_from(Source).where(Source.deleted_at.is_(None)),
                                    sets))
        return int(sources or 0), repo.count_warc_volume(s, sets=sets)


def _named(s: Session, sets: set[str] | None, listed: list[Source], *, source_ids: set[str],
           collections: set[str | None]) -> list[Source]:
    """The sources whose names the page shows: those listed, and (deleted ones too) those of the runs, volume
    rows and exports shown; not every source of the installation."""
    wanted = {c for c in collections if c}
    found = s.scalars(_in_sets(select(Source).where(or_(Source.id.in_(source_ids - {src.id for src in listed}),
                                                        Source.collection_id.in_(wanted))), sets))
    return list({src.id: src for src in [*listed, *found]}.values())


class Names:
    """Human names beside the ids: a collection set's name (the web application's sets), a collection's (the
    name of the source harvesting into it; the CLI's default collection id is the source's hex id)."""

    def __init__(self, *, sets: dict[str, str], sources: list[Source]) -> None:
        self.sets = sets
        self.sources = {src.id: src for src in sources}
        self.collections: dict[tuple[str, str], str] = {}
        for src in sorted(sources, key=lambda src: src.deleted_at is None):  # a live source's name wins
            self.collections[(src.collection_set_id, src.collection_id)] = src.name

    def set_name(self, set_id: str | None) -> str:
        return self.sets.get(set_id or "", set_id or "-")

    def collection_name(self, set_id: str | None, collection_id: str | None) -> str:
        return self.collections.get((set_id or "", collection_id or ""), collection_id or "-")

    def export_collection(self, collection_id: str | None) -> str:
        """An export names its collection without its set: the name of a collection of that id in any set."""
        found = [name for (_set, coll), name in self.collections.items() if coll == collection_id]
        return found[0] if found else collection_id or "-"

    def source_name(self, source_id: str | None) -> str:
        src = self.sources.get(source_id or "")
        return src.name if src else source_id or "-"

    def source_set(self, source_id: str | None) -> str | None:
        src = self.sources.get(source_id or "")
        return self.set_name(src.collection_set_id) if src else None


def export_rows(s: Session, exports: list[Export]) -> list[dict[str, object]]:
    """The newest exports, with who asked for them in the web application (None: the CLI or a script)."""
    asked = {r.export_id: r for r in s.scalars(select(ExportRequest).where(
        ExportRequest.export_id.in_([e.id for e in exports])))} if exports else {}
    return [{"id": e.id, "type": e.export_type, "format": e.format, "status": e.status,
             "collection": e.collection_id,
             "requested_by": asked[e.id].user_name if e.id in asked else None,
             "created_at": as_utc(e.created_at), "date_ended": e.date_ended,
             "errors": e.errors, "warnings": e.warnings} for e in exports]


def known_queues(config: Config) -> list[str]:
    from swath.services import all_services

    names = [config.queue_prefix + name for name in all_services(config.platforms)]  # those `broker setup` declares
    return [q for q in [config.status_queue, config.dead_letter_queue, *names] if q]


def passive_queues(config: Config) -> list[dict[str, object]]:
    connection = pika.BlockingConnection(connection_parameters(config, name="swath-dashboard"))
    try:
        out = []
        for name in known_queues(config):
            channel = connection.channel()  # a failed passive declare closes its channel
            try:
                ok = channel.queue_declare(queue=name, passive=True).method
                out.append({"name": name, "messages": ok.message_count, "consumers": ok.consumer_count})
                channel.close()
            except pika.exceptions.ChannelClosedByBroker:
                out.append({"name": name, "messages": None, "consumers": None, "missing": True})
        return out
    finally:
        connection.close()


def management_queues(url: str, config: Config) -> list[dict[str, object]]:
    parts = urllib.parse.urlsplit(url)
    if parts.hostname is None:  # the TypeError `None + str` below raised, without the URL: it may hold a password
        raise TypeError("the management URL has no host")
    vhost = urllib.parse.quote(pika.URLParameters(amqp_urls(config.amqp_url)[0]).virtual_host, safe="")
    clean = urllib.parse.urlunsplit((parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""),
                                     parts.path.rstrip("/") + f"/api/queues/{vhost}", "", ""))
    request = urllib.request.Request(clean)
    user, password = parts.username or "guest", parts.password or "guest"
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    with urllib.request.urlopen(request, timeout=5) as response:
        rows = json.load(response)
    wanted = set(known_queues(config))
    prefix = config.queue_prefix
    return [{"name": r["name"], "messages": r.get("messages", 0), "consumers": r.get("consumers", 0)}
            for r in sorted(rows, key=lambda r: r["name"])
            if r["name"] in wanted or (prefix and r["name"].startswith(prefix))]


def peek_dead_letters(config: Config, limit: int = PEEK_LIMIT) -> list[dict[str, object]]:
    connection = pika.BlockingConnection(connection_parameters(config, name="swath-dashboard"))
    try:
        channel = connection.channel()
        out: list[dict[str, object]] = []
        for _ in range(limit):
            try:
                method, props, body = channel.basic_get(config.dead_letter_queue, auto_ack=False)
            except pika.exceptions.ChannelClosedByBroker:  # not declared yet: nothing dead-lettered
                return out
            if method is None:
                break
            letter = DeadLetter.of(method, props, body)
            out.append({"routing_key": letter.routing_key, "queue": letter.queue, "code": letter.code,
                        "message": letter.reason, "bytes": len(body)})
        return out  # closing the connection returns every peeked message to the queue
    finally:
        connection.close()
