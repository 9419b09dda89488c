"""Xesam-PMH's declaration: data only, importing only swath.core (its harvester is harvester.py beside it, with
bus.py, crawler.py and payload.py; the reference target records.py and target.py; its table exporter.py; what
the CLI's `swath xesam serve` uses, public.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, OptionSchema, Platform, Seeds, options

_STRINGS: OptionSchema = {"type": "array", "items": {"type": "string"}}
PLATFORM = Platform(
    name="xesam",
    title="Xesam-PMH",
    harvester="swath.platforms.xesam.harvester:XesamHarvester",
    # may stream: only a live crawl waits for harvest.stop
    harvest_types=(HarvestKind(name="xesam_pmh", method="crawl", stream=True, seeds=Seeds(
        example=({"id": "target", "token": "org.swath.xesam.Target"},))),),
    export_types=(ExportKind(name="xesam_pmh", sources=("swath.platforms.xesam.exporter:Xesam",), current_state=True,
                             reads="Xesam payload `resource` records + full-dump `metadata` records"),),
    exporter_service="Xesam Exporter",
    clients=("jeepney",),
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
    codes={
        "xesam_no_bus": "DBUS_SESSION_BUS_ADDRESS is unset or the bus cannot be reached",
        "xesam_target_unreachable": "the seed's target is not on the bus or refused ListRecords",
        "xesam_full_dump": "the target sends a full dump; this target's earlier payloads are superseded",
        "xesam_out_of_order": "payloads older than ones already received; stored, but the target is faulty",
        "xesam_bad_payload": "an UpdateRecords call with the wrong signature or an invalid payload; refused",
        "xesam_invalidated": "the target invalidated the crawler before the harvest was done",
        "xesam_incomplete": "the target went silent before sending everything older than the start",
        "xesam_stopped": "harvest.stop ended the crawl: what was received so far is stored, counts given",
    },
)
