"""The Kiel Archive's declaration: data only, importing only swath.core (its harvester is harvester.py beside it,
with the archive's modules; what the CLI's `swath kiel` uses, public.py)."""

from __future__ import annotations

from swath.core.platforms import HarvestKind, Platform, Seeds, options

PLATFORM = Platform(
    name="kiel",
    title="Kiel Archive",
    harvester="swath.platforms.kiel.harvester:KielHarvester",
    # a seed token: the URL of an AMF file, or an AMF file or folder inside the data root
    harvest_types=(HarvestKind(name="kiel_archive", method="archive",
                               seeds=Seeds(example=({"id": "amf", "token": "incoming/amf"},))),),
    options=options(
        # redist.py REDISTS' names (tests/test_kiel.py holds them equal)
        redist={"type": "string", "enum": ["nested", "repec"], "default": "nested",
                "description": "how record ids become archive paths"},
        branches={"type": "string", "description": "the branches file inside the data root "
                                                    "(default <path>/etc/branches.xml)"},
        termination={"type": "string", "description": "a termination file inside the data root "
                                                       "(default <path>/etc/termination.ini when it exists)"},
    ),
    codes={
        "kiel_bad_branches": "branches.xml is not well-formed or holds an XPath that does not compile",
        "kiel_bad_record": "an AMF file or record could not be parsed or has no id; skipped",
        "kiel_object_failed": "an object could not be fetched; stored as status 000 with an empty body",
        "kiel_redirect_loop": "a redirect chain came back to a URL already in it or was too long",
        "kiel_bad_termination": "the termination strategy file is invalid; nothing was pruned",
        "kiel_no_record": "`swath kiel notes`: the archive has no record directory for that id",
        "kiel_bad_note": "a line of a record's notes file is not a note (edited by hand); skipped",
    },
)
