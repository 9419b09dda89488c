"""Statistics of a collection and of each of its seeds (swath/store/stats.py): the part of the collection page
(templates/stats_collection.html), a seed's page, and a JSON endpoint for each. Every one is a `page`: login
required, and the collection is looked up as its HTML page does (another group's gets the same 404). The numbers
come through the web's StatsCache (swath/store/stats_cache.py): summed again only when a run or WARC changed."""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup
from sqlalchemy.orm import Session
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from swath.store import web_repo
from swath.store.models import Source
from swath.store.repo import NotFound
from swath.store.stats import CollectionStats, SeedStats
from swath.store.stats_cache import StatsCache
from swath.store.web_models import CollectionSet
from swath.web.charts import MAX_BARS, bar_chart
from swath.web.views import Ctx, page


@dataclass
class StatsView:
    """What the templates show: the numbers, the chart and its table's rows (the chart's days, newest first)."""

    stats: CollectionStats | SeedStats
    chart: Markup
    kinds: list[str]
    days: list[tuple[str, dict[str, int]]]
    earlier_days: int  # days with items older than the chart's


def view(stats: CollectionStats | SeedStats, *, ident: str, title: str) -> StatsView:
    days = stats.per_day if isinstance(stats, CollectionStats) else sorted(stats.days.items())
    points = [(day, sum(counts.values())) for day, counts in days]
    shown = days[-MAX_BARS:]
    return StatsView(stats=stats, chart=bar_chart(points, ident=ident, title=title, unit="items"),
                     kinds=sorted(stats.items), days=list(reversed(shown)), earlier_days=len(days) - len(shown))


def collection_view(s: Session, src: Source, kept: StatsCache) -> StatsView:
    """The collection page's statistics (its one hook into routes_collections.show_collection)."""
    return view(kept.get(s, src), ident="items-per-day", title=f"Items per day in {src.name}")


def _collection(ctx: Ctx) -> tuple[Source, CollectionStats, CollectionSet | None]:
    with ctx.store.session() as s:
        src, cs = web_repo.get_collection(s, ctx.user, ctx.request.path_params["source_id"])
        return src, ctx.web.stats.get(s, src), cs


def _seed(ctx: Ctx) -> tuple[Source, SeedStats, CollectionSet | None]:
    src, stats, cs = _collection(ctx)
    seed = stats.seed(ctx.request.path_params["seed_id"])
    if seed is None:
        raise NotFound("no such seed in this collection")
    return src, seed, cs


@page
def collection_json(ctx: Ctx) -> Response:
    src, stats, _cs = _collection(ctx)
    return JSONResponse({"collection": {"id": src.id, "name": src.name}, **stats.as_dict()})


@page
def seed_page(ctx: Ctx) -> Response:
    src, seed, cs = _seed(ctx)
    return ctx.render("seed.html", src=src, cs=cs, seed=seed,
                      stats=view(seed, ident="seed-items-per-day", title=f"Items per day of seed {seed.label}"))


@page
def seed_json(ctx: Ctx) -> Response:
    src, seed, _cs = _seed(ctx)
    return JSONResponse({"collection": {"id": src.id, "name": src.name}, **seed.as_dict()})


ROUTES = [
    Route("/collections/{source_id}/stats.json", collection_json, methods=["GET"]),
    Route("/collections/{source_id}/seeds/{seed_id}", seed_page, methods=["GET"]),
    Route("/collections/{source_id}/seeds/{seed_id}/stats.json", seed_json, methods=["GET"]),
]
