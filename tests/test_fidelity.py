"""Issue 29 item 6: the fidelity property for every REST/listing platform, on its fake (tests/fidelity.py says
what is checked). Each case runs twice: once straight through with WARCs rotated every few kilobytes, once shut
down mid-listing and resumed by the same start; the fakes of newest-first listings publish all along."""

from __future__ import annotations

import dataclasses

import pytest

from tests.fakes.social import publishing
from tests.fidelity import Case, check_bodies, check_items, harvest
from tests.fidelity_cases import CASES

ROTATE_AT = 4 * 1024  # bytes (compressed): several WARCs for every case
PAUSE = 0.15  # seconds before each listing answer: longer than the engine's control tick (harvesters/run.py)


@pytest.mark.parametrize("interrupted", [False, True], ids=["rotated", "resumed"])
@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_every_body_is_kept_and_every_item_exported_once(case: Case, interrupted: bool, config, fixtures_dir):
    config = dataclasses.replace(config, warc_max_bytes=ROTATE_AT)
    fake = case.make(fixtures_dir)
    with fake.server if not hasattr(fake, "__enter__") else fake:
        if case.api:
            config = config.with_api_url(case.api, fake.url)
        before = case.listed(fake)
        with publishing(None if case.publish is None else lambda: case.publish(fake)) as published:
            run = harvest(config, case, fake, interrupted=interrupted, pause=PAUSE)
        secrets = case.secrets(fake)

    assert run.final["status"] == "completed success", (run.final["errors"], run.final["warnings"])
    assert run.warcs >= 2, "the WARC was never rotated"
    bodies = check_bodies(run, secrets, complete=not interrupted)
    items = check_items(run, case, before)
    print(f"fidelity {case.name} {'resumed' if interrupted else 'rotated'}: {bodies} bodies compared, "
          f"{items} items checked, {len(published)} published during the run, {run.warcs} WARCs")
