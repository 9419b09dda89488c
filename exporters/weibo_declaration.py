"""Weibo's declaration: export only (data only; its table is exporters/weibo.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, Platform

# export-only: legacy SFM collections hold Weibo responses; swath has no Weibo harvester
PLATFORM = Platform(
    name="weibo",
    title="Weibo",
    export_types=tuple(ExportKind(name=name, sources=("swath.exporters.weibo:Weibo",))
                       for name in ("weibo_timeline", "weibo_search")),
)
