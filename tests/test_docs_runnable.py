"""Every command block marked `<!-- runnable -->` in docs/ and the README runs as written.

Each block runs in bash (`set -e`: every command must succeed) in a fresh folder, with the installed `swath`
first on PATH, a data root of its own, and SWATH_<PLATFORM>_API_URL pointing the examples' seeds at local
fakes of CKAN, OpenDataSoft, DCAT, OAI-PMH (a small repository written here) and a Mastodon instance. What each
`swath harvest run` printed is then compared with what the fake it harvested serves.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

from tests.fakes.ckan import CKANPortal
from tests.fakes.dcat import DCATPortal
from tests.fakes.httpserver import FakeServer, Request, Response
from tests.fakes.mastodon import FakeMastodon
from tests.fakes.oai import XML
from tests.fakes.ods import ODSPortal

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- runnable -->"
BLOCK = re.compile(r"^<!-- runnable -->\n```(?:sh|bash)\n(.*?)^```$", re.M | re.S)
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def runnable_blocks() -> list[tuple[str, str]]:
    """(where, script) of every marked block."""
    found = []
    for path in DOCS:
        text = path.read_text("utf-8")
        blocks = BLOCK.findall(text)
        # a marker not followed by a sh fence would silently test nothing
        assert len(blocks) == text.count(MARKER), f"{path.name}: a {MARKER} line is not followed by a ```sh block"
        found += [(f"{path.name}#{i}", block) for i, block in enumerate(blocks, 1)]
    return found


BLOCKS = runnable_blocks()


def test_the_docs_have_runnable_blocks_for_every_metadata_protocol():
    scripts = "\n".join(script for _, script in BLOCKS)
    for harvest_type in ("ckan", "opendatasoft", "dcat", "oai_pmh"):
        assert f"swath harvest example {harvest_type}" in scripts


class Repository:
    """An OAI-PMH repository of `count` oai_dc records, `per_page` a ListRecords page (token = next offset)."""

    def __init__(self, fixtures_dir: Path, *, count: int, per_page: int) -> None:
        self.identify = (fixtures_dir / "oai-pmh" / "sickle" / "Identify.xml").read_bytes()
        self.count, self.per_page = count, per_page
        self.server = FakeServer({"/oai": self.handle})

    def handle(self, req: Request) -> Response:
        if req.arg("verb") == "Identify":
            return Response(200, self.identify, content_type=XML)
        start = int(req.arg("resumptionToken") or 0)
        end = min(start + self.per_page, self.count)
        records = "".join(
            f"<record><header><identifier>oai:example.org:{n}</identifier><datestamp>2024-01-0{1 + n % 9}"
            f"</datestamp></header><metadata><oai_dc:dc xmlns:oai_dc='http://www.openarchives.org/OAI/2.0/oai_dc/' "
            f"xmlns:dc='http://purl.org/dc/elements/1.1/'><dc:title>Record {n}</dc:title></oai_dc:dc></metadata>"
            f"</record>" for n in range(start, end))
        token = f"<resumptionToken>{end}</resumptionToken>" if end < self.count else "<resumptionToken/>"
        body = (f"<?xml version='1.0' encoding='UTF-8'?><OAI-PMH xmlns='http://www.openarchives.org/OAI/2.0/'>"
                f"<responseDate>2024-02-01T00:00:00Z</responseDate><request verb='ListRecords'>{self.server.url}"
                f"/oai</request><ListRecords>{records}{token}</ListRecords></OAI-PMH>")
        return Response(200, body.encode(), content_type=XML)


@contextmanager
def fakes(fixtures_dir: Path) -> Iterator[dict]:
    """Started fakes by platform, with the seed URL each example should get and the items each serves."""
    ckan, ods = CKANPortal(count=23), ODSPortal(count=17)
    dcat, oai = DCATPortal(syntax="jsonld", count=9, per_page=4), Repository(fixtures_dir, count=7, per_page=3)
    with ExitStack() as stack:
        for fake in (ckan, ods, dcat, oai):
            stack.enter_context(fake.server)
        mastodon = stack.enter_context(FakeMastodon(statuses_per_tag=30))
        yield {
            "mastodon": (mastodon, mastodon.url, len(mastodon.tagged("libraries"))),
            "ckan": (ckan, ckan.server.url, len(ckan.packages)),
            "opendatasoft": (ods, ods.server.url, len(ods.datasets)),
            "dcat": (dcat, f"{dcat.server.url}/catalog", dcat.spec.count),
            "oai_pmh": (oai, f"{oai.server.url}/oai", oai.count),
        }


def finals(stdout: str) -> list[dict]:
    lines = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    statuses = [m["message"] for m in lines if m["routing_key"].startswith("harvest.status.")]
    return [s for s in statuses if s["status"].startswith("completed")]


def totals(status: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for day in status["stats"].values():
        for label, n in day.items():
            out[label] = out.get(label, 0) + n
    return out


@pytest.mark.parametrize(("where", "script"), BLOCKS, ids=[w for w, _ in BLOCKS])
def test_a_runnable_block_runs_as_written(where, script, tmp_path, fixtures_dir):
    with fakes(fixtures_dir) as served:
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "SWATH_DATA_ROOT": str(tmp_path / "data"), "SWATH_DB_URL": ""}
        env.update({f"SWATH_{name.upper()}_API_URL": url for name, (_, url, _) in served.items()})
        work = tmp_path / "work"
        work.mkdir()
        result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=work, env=env,
                                capture_output=True, text=True, timeout=300)
        asked = {name: len(fake.server.requests) for name, (fake, _, _) in served.items()}
    assert result.returncode == 0, f"{where} failed:\n{script}\n--- stderr\n{result.stderr[-3000:]}"
    for final in finals(result.stdout):
        harvested = next(name for name in served if final["id"].startswith((f"example-{name}-", f"example-{name}_")))
        assert final["status"] == "completed success", final
        assert asked[harvested] > 0  # the example's seed was the fake, not the public endpoint
        assert totals(final).get("posts" if harvested == "mastodon" else "done") == served[harvested][2], final
    runs = script.count("swath harvest run ")
    assert len(finals(result.stdout)) == runs  # each run ended with a final status on stdout
