"""CKAN's declaration (data only; its backend and harvester are harvester.py beside it, its table exporter.py)."""

from __future__ import annotations

from swath.core.platforms import DATASET_RECORDS, DRYRUN_OPTION, ExportKind, HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="ckan",
    title="CKAN",
    harvester="swath.platforms.ckan.harvester:CKANHarvester",
    harvest_types=(HarvestKind(name="ckan", method="harvest_sources", seeds=Seeds(
        token="url", example=({"id": "demo-ckan", "token": "https://demo.ckan.org"},))),),
    export_types=(ExportKind(name="ckan", sources=("swath.platforms.ckan.exporter:CkanDatasets",),
                              current_state=True, reads=DATASET_RECORDS),),
    backend="swath.platforms.ckan.harvester:CKANBackend",
    options=options(
        dryrun=DRYRUN_OPTION,
        rows={"type": "integer", "minimum": 1, "description": "page size of package_search"},
        fq={"type": "string", "description": "an extra Solr filter"},
        incremental={"type": "boolean", "default": True, "description": "datasets modified since the last run"},
    ),
)
