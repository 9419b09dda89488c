"""OAI-PMH's declaration (data only; its backend and harvester are harvester.py beside it, with mapping.py; its
table exporter.py)."""

from __future__ import annotations

from swath.core.platforms import (
    DATASET_RECORDS,
    DRYRUN_OPTION,
    ExportKind,
    HarvestKind,
    OptionSchema,
    Platform,
    Seeds,
    options,
)

PLATFORM = Platform(
    name="oai_pmh",
    title="OAI-PMH",
    harvester="swath.platforms.oai_pmh.harvester:OAIPMHHarvester",
    harvest_types=(HarvestKind(name="oai_pmh", method="harvest_sources", seeds=Seeds(
        token="url", example=({"id": "zenodo", "token": "https://zenodo.org/oai2d"},))),),
    export_types=(ExportKind(name="oai_pmh", sources=("swath.platforms.oai_pmh.exporter:OaiRecords",),
                              current_state=True, reads=DATASET_RECORDS),),
    backend="swath.platforms.oai_pmh.harvester:OAIPMHBackend",
    options=options(
        dryrun=DRYRUN_OPTION,
        metadataPrefix={"type": "string", "default": "oai_dc", "description": "the metadata format to ask for"},
        set={"type": "string", "description": "harvest this set only"},
        **{"from": OptionSchema(type="string", format="date-or-date-time",
                                description="harvest from this date on (overrides the incremental date)")},
        incremental={"type": "boolean", "default": True, "description": "from the last run's date on"},
    ),
)
