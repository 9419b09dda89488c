"""Issue 29 item 6: the fidelity property for every REST/listing platform, on its fake (tests/fidelity.py says
what is checked). Each case runs straight through, shut down mid-listing then resumed by the same start, and (where
the type has the option) as two incremental harvests in a row; WARCs rotate every few kilobytes, and the fakes of
newest-first listings publish all along. `-s` shows per case the bodies compared and the items checked."""

from __future__ import annotations

import dataclasses

import pytest

from tests.fakes.social import publishing
from tests.fidelity import Case, check_bodies, check_items, harvest, server_of
from tests.fidelity_cases import CASES

ROTATE_AT = 4 * 1024  # bytes (compressed): several WARCs for every case
PAUSE = 0.12  # seconds before each listing answer: longer than the engine's control tick (harvesters/run.py)


@pytest.mark.parametrize(("case", "mode"), [pytest.param(c, mode, id=f"{c.name}-{mode}", marks=c.marks)
                                            for c in CASES for mode in c.modes])
def test_every_body_is_kept_and_every_item_exported_once(case: Case, mode: str, config, fixtures_dir, tmp_path):
    config = dataclasses.replace(config, warc_max_bytes=ROTATE_AT)
    fake = case.make(fixtures_dir, tmp_path)
    with fake if hasattr(fake, "__enter__") else server_of(fake):
        if case.api:
            config = config.with_api_url(case.api, server_of(fake).url)
        with publishing(None if case.publish is None else lambda: case.publish(fake)) as published:
            run = harvest(config, case, fake, mode=mode, pause=PAUSE)
        secrets = case.secrets(fake)

    assert run.final["status"] == "completed success", (run.final["errors"], run.final["warnings"])
    assert run.warcs >= 2, "the WARC was never rotated"
    bodies = check_bodies(run, secrets, complete=mode != "resumed")
    items = check_items(run, case)
    print(f"fidelity {case.name} {mode}: {bodies} bodies compared, "
          f"{items} items checked, {len(published)} published during the run, {run.warcs} WARCs")
