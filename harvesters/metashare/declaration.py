"""META-SHARE's declaration (data only; its harvester is harvesters/metashare/harvester.py, its table
exporters/metashare.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="metashare",
    title="META-SHARE",
    harvester="swath.harvesters.metashare.harvester:MetashareHarvester",
    harvest_types=(HarvestKind(name="metashare_sync", method="sync", seeds=Seeds(
        token="url", example=({"id": "node", "token": "https://metashare.example.org"},))),),
    export_types=(ExportKind(name="metashare_sync", sources=("swath.exporters.metashare:Metashare",),
                             current_state=True, reads="`GET /sync/<id>/metadata/` responses + inventories"),),
    options=options(),
    credentials=(("username", "password"),),
    login_names=("username",),  # kept out of the recorded login request only (docs/security.md)
)
