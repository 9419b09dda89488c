"""OpenDataSoft's declaration: data only, importing only swath.core (its backend and harvester are harvester.py
beside it; its table exporter.py)."""

from __future__ import annotations

from swath.core.platforms import DATASET_RECORDS, DRYRUN_OPTION, ExportKind, HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="opendatasoft",
    title="OpenDataSoft",
    harvester="swath.platforms.opendatasoft.harvester:OpenDataSoftHarvester",
    harvest_types=(HarvestKind(name="opendatasoft", method="harvest_sources", seeds=Seeds(
        token="url", example=({"id": "ods-hub", "token": "https://data.opendatasoft.com"},))),),
    export_types=(ExportKind(name="opendatasoft", sources=("swath.platforms.opendatasoft.exporter:OdsDatasets",),
                             current_state=True, reads=DATASET_RECORDS),),
    backend="swath.platforms.opendatasoft.harvester:OpenDataSoftBackend",
    options=options(
        dryrun=DRYRUN_OPTION,
        where={"type": "string", "description": "an ODSQL filter on the catalog"},
    ),
)
