"""DCAT's declaration: data only, importing only swath.core (its backend and harvester are harvester.py beside it,
with mapping.py and rdf.py; its table exporter.py)."""

from __future__ import annotations

from swath.core.platforms import DATASET_RECORDS, DRYRUN_OPTION, ExportKind, HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="dcat",
    title="DCAT",
    harvester="swath.platforms.dcat.harvester:DCATHarvester",
    harvest_types=(HarvestKind(name="dcat", method="harvest_sources", seeds=Seeds(
        token="url", example=({"id": "data-gouv", "token": "https://www.data.gouv.fr/catalog.jsonld"},))),),
    export_types=(ExportKind(name="dcat", sources=("swath.platforms.dcat.exporter:DcatDatasets",), current_state=True,
                              reads=DATASET_RECORDS),),
    backend="swath.platforms.dcat.harvester:DCATBackend",
    clients=("rdflib",),
    options=options(
        dryrun=DRYRUN_OPTION,
        language={"type": "string", "default": "en",
                  "description": "the language a multilingual title/description/keyword is taken in"},
    ),
)
