"""META-SHARE's declaration: data only, importing only swath.core (its harvester is harvester.py beside it, with
client.py, protocol.py, safezip.py and storage.py; its node server.py; its table exporter.py; what the CLI's
`swath metashare` uses, public.py)."""

from __future__ import annotations

from swath.core.platforms import ExportKind, HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="metashare",
    title="META-SHARE",
    harvester="swath.platforms.metashare.harvester:MetashareHarvester",
    harvest_types=(HarvestKind(name="metashare_sync", method="sync", seeds=Seeds(
        token="url", example=({"id": "node", "token": "https://metashare.example.org"},))),),
    export_types=(ExportKind(name="metashare_sync", sources=("swath.platforms.metashare.exporter:Metashare",),
                             current_state=True, reads="`GET /sync/<id>/metadata/` responses + inventories"),),
    options=options(),
    credentials=(("username", "password"),),
    login_names=("username",),  # kept out of the recorded login request only (docs/security.md)
    codes={
        "sync_protocol_unsupported": 'the node answered 501 or without "Sync-Protocol: 1.0"',
        "bad_inventory_entry": "an inventory key is not a 64-hex storage id or its value not a 32-hex MD5",
        "checksum_mismatch": "an LR's recomputed MD5 differs from the node's inventory; LR not stored",
        "lr_other_node": "an LR id already held from another node: refused (an LR belongs to its node)",
        "invalid_lr": "an LR's metadata.xml or storage-global.json is malformed; LR not stored",
        "bad_zip": "a response that must be a ZIP file is not a readable one",
        "zip_unsafe_name": 'a ZIP entry name is absolute or climbs with ".." (zip-slip); refused unread',
        "zip_too_large": "a ZIP inflates past the size limit (ZIP bomb); refused",
        "zip_unexpected_entries": "a ZIP lacks a required entry, has extra ones or the wrong order",
    },
)
