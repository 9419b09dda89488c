"""Xesam-PMH's declaration (data only; its harvester is harvesters/xesam/harvester.py, its table exporters/xesam.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, OptionSchema, Platform, Seeds, options

_STRINGS: OptionSchema = {"type": "array", "items": {"type": "string"}}
PLATFORM = Platform(
    name="xesam",
    title="Xesam-PMH",
    harvester="swath.harvesters.xesam.harvester:XesamHarvester",
    # may stream: only a live crawl waits for harvest.stop
    harvest_types=(HarvestKind(name="xesam_pmh", method="crawl", stream=True, seeds=Seeds(
        example=({"id": "target", "token": "org.swath.xesam.Target"},))),),
    export_types=(ExportKind(name="xesam_pmh", sources=("swath.exporters.xesam:Xesam",), current_state=True),),
    exporter_service="Xesam Exporter",
    options=options(
        live={"type": "boolean", "description": "keep crawling live changes until harvest.stop"},
        fields={**_STRINGS, "description": "hint: the field names wanted (default all)"},
        content_cats={**_STRINGS, "description": "inclusive content category filter (default all)"},
        source_cats={**_STRINGS, "description": "inclusive source category filter (default all)"},
        max_batch_size={"type": "integer", "minimum": 1, "maximum": 2**32 - 1, "default": 100,
                        "description": "hint: payloads per UpdateRecords"},
        idle_timeout={"type": "number", "exclusiveMinimum": 0, "default": 30.0,
                      "description": "not live: seconds of silence after which the harvest ends (xesam_incomplete)"},
    ),
)
