"""The Kiel Archive's declaration (data only; its harvester is harvesters/kiel/harvester.py)."""

from __future__ import annotations

from swath.core.platforms import HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="kiel",
    title="Kiel Archive",
    harvester="swath.harvesters.kiel.harvester:KielHarvester",
    # a seed token: the URL of an AMF file, or an AMF file or folder inside the data root
    harvest_types=(HarvestKind(name="kiel_archive", method="archive",
                               seeds=Seeds(example=({"id": "amf", "token": "incoming/amf"},))),),
    options=options(
        # harvesters/kiel/redist.py REDISTS' names (tests/test_kiel.py holds them equal)
        redist={"type": "string", "enum": ["nested", "repec"], "default": "nested",
                "description": "how record ids become archive paths"},
        branches={"type": "string", "description": "the branches file inside the data root "
                                                    "(default <path>/etc/branches.xml)"},
        termination={"type": "string", "description": "a termination file inside the data root "
                                                       "(default <path>/etc/termination.ini when it exists)"},
    ),
)
