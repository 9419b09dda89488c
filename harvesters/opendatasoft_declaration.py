"""OpenDataSoft's declaration (data only; its backend is harvesters/opendatasoft.py, its table
exporters/datasets.py)."""

from __future__ import annotations

from swath.core.platforms import DATASET_RECORDS, DRYRUN_OPTION, ExportKind, HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="opendatasoft",
    title="OpenDataSoft",
    harvester="swath.harvesters.opendatasoft:OpenDataSoftHarvester",
    harvest_types=(HarvestKind(name="opendatasoft", method="harvest_sources", seeds=Seeds(
        token="url", example=({"id": "ods-hub", "token": "https://data.opendatasoft.com"},))),),
    export_types=(ExportKind(name="opendatasoft", sources=("swath.exporters.datasets:OdsDatasets",),
                             current_state=True, reads=DATASET_RECORDS),),
    backend="swath.harvesters.opendatasoft:OpenDataSoftBackend",
    options=options(
        dryrun=DRYRUN_OPTION,
        where={"type": "string", "description": "an ODSQL filter on the catalog"},
    ),
)
