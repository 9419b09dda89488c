"""Issue #34 (1): the layers hold at run time. Finding a type, checking a message, listing the types and the
metadata backends read the platform declarations only, so they load no platform's client library; a harvest (or
an export that needs one) loads it when it runs. Each case runs in a fresh interpreter: this process has imported
everything already.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from swath.core import discovery
from swath.exporters import registry as export_registry
from swath.harvesters.registry import harvester_types

# the client libraries the platforms declare (Twitter's twarc, Flickr's flickrapi, DCAT's rdflib, ...) and object
# storage's (boto3: loaded only when SWATH_STORAGE_URL is s3://)
CLIENTS = sorted({client for platform in discovery.platforms() for client in platform.clients} | {"boto3", "botocore"})

# argv: the case, the file to write {"checked": [...], "loaded": [...]} to (stdout is the CLI's)
PROBE = """
import json, sys

case, out = sys.argv[1], sys.argv[2]
checked = []
if case == "export_lookup":
    from swath.exporters import registry
    for name in registry.export_types():
        checked.append(registry.lookup(name).name)
elif case == "harvest_example":  # prints each type's example harvest.start after validating it
    from swath.cli import cli
    from swath.harvesters.registry import harvester_types
    for htype in harvester_types():
        cli.main(["harvest", "example", htype.name], standalone_mode=False)
        checked.append(htype.name)
elif case == "harvest_types":
    from swath.cli import cli
    cli.main(["harvest", "types", "--json"], standalone_mode=False)
    checked.append("swath harvest types --json")
elif case == "harvest_backends":
    from swath.cli import cli
    cli.main(["harvest", "backends", "--json"], standalone_mode=False)
    checked.append("swath harvest backends --json")
elif case == "harvest_load":  # the control: running a harvest does load its platform's client library
    from swath.harvesters.registry import lookup
    lookup(sys.argv[3]).load()
    checked.append(sys.argv[3])
clients = set(sys.argv[4:] if case == "harvest_load" else sys.argv[3:])
loaded = sorted({m.partition(".")[0] for m in sys.modules} & clients)
with open(out, "w") as f:
    json.dump({"checked": checked, "loaded": loaded}, f)
"""


def probe(tmp_path: Path, case: str, *args: str) -> dict[str, list[str]]:
    out = tmp_path / f"{case}.json"
    env = {**os.environ, "SWATH_DATA_ROOT": str(tmp_path / "data"), "SWATH_DB_URL": ""}
    done = subprocess.run([sys.executable, "-c", PROBE, case, str(out), *args, *CLIENTS], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, list[str]] = json.loads(out.read_text())
    return result


def expected(case: str) -> list[str]:
    if case == "export_lookup":
        return export_registry.export_types()
    if case == "harvest_example":
        return [t.name for t in harvester_types()]
    return [f"swath harvest {case.partition('_')[2]} --json"]


@pytest.mark.parametrize("case", ["export_lookup", "harvest_example", "harvest_types", "harvest_backends"])
def test_finding_checking_and_listing_types_load_no_client_library(case, tmp_path):
    result = probe(tmp_path, case)
    assert result["checked"] == expected(case)  # every type was looked up or validated, not an early exit
    assert result["loaded"] == [], f"{case} loaded client libraries: {', '.join(result['loaded'])}"


def test_the_probe_sees_the_client_library_a_harvest_loads(tmp_path):
    result = probe(tmp_path, "harvest_load", "twitter_search_2")
    assert result["checked"] == ["twitter_search_2"]
    assert "twarc" in result["loaded"]
    assert {"twarc", "flickrapi", "mastodon", "atproto", "rdflib", "jeepney"} <= set(CLIENTS)
