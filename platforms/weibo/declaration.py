"""Weibo's declaration: export only; data only, importing only swath.core (its table is exporter.py beside it)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, Platform, RetiredKind

# export-only: legacy SFM collections hold Weibo responses; swath has no Weibo harvester (its API is gone)
PLATFORM = Platform(
    name="weibo",
    title="Weibo",
    export_types=tuple(ExportKind(name=name, sources=("swath.platforms.weibo.exporter:Weibo",),
                                  reads="`statuses/friends_timeline`, `search/topics` (legacy SFM WARCs)")
                       for name in ("weibo_timeline", "weibo_search")),
    retired_types=(RetiredKind(name="weibo_timeline", gone="Weibo's open API for third-party timelines"),
                   RetiredKind(name="weibo_search", gone="Weibo's open API for topic searches")),
)
