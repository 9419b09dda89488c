"""The generic test and demo platform's declaration: data only, importing only swath.core (its harvester is
harvester.py beside it)."""

from __future__ import annotations

from swath.core.platforms import HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="generic",
    title="Generic",
    harvester="swath.platforms.generic.harvester:GenericHarvester",
    # the test and demo harness: seeds are not checked here (a run without them reports it)
    harvest_types=(HarvestKind(name="generic_pages", method="pages", seeds=Seeds(
                       required=False, example=({"id": "items", "token": "http://127.0.0.1:8000/items"},))),
                   HarvestKind(name="generic_stream", method="stream", stream=True, seeds=Seeds(
                       required=False, example=({"id": "events", "token": "http://127.0.0.1:8000/stream"},)))),
    options=options(incremental={"type": "boolean", "description": "send the highest id seen as since_id"}),
)
