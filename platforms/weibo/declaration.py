"""Weibo's declaration: export only; data only, importing only swath.core (its table is exporter.py beside it)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, Platform

# export-only: legacy SFM collections hold Weibo responses; swath has no Weibo harvester
PLATFORM = Platform(
    name="weibo",
    title="Weibo",
    export_types=tuple(ExportKind(name=name, sources=("swath.platforms.weibo.exporter:Weibo",),
                                  reads="`statuses/friends_timeline`, `search/topics` (legacy SFM WARCs)")
                       for name in ("weibo_timeline", "weibo_search")),
)
