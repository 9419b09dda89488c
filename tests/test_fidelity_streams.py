"""Issue 29 item 6 for the streams: the fidelity property (tests/fidelity_streams.py says what is checked) for
mastodon_stream and bluesky_jetstream, the fake publishing at a steady rate on its own thread, with forced
reconnects in each run, a shutdown mid-stream then the same start again, and WARCs rotating every 0.15 s. `-s`
shows per platform the bodies and segments compared and the items checked."""

from __future__ import annotations

import dataclasses

import pytest

from tests.fidelity import check_bodies
from tests.fidelity_streams import STREAM_CASES, StreamCase, check_stream_bytes, check_stream_items, harvest_stream

EVERY = 0.01  # seconds between two items the fake publishes


@pytest.mark.parametrize("case", STREAM_CASES, ids=[c.name for c in STREAM_CASES])
def test_every_stream_byte_is_kept_and_every_published_item_exported_once(case: StreamCase, config):
    config = dataclasses.replace(config, warc_max_seconds=0.15, http_backoff=0.05)
    with case.make() as fake:
        if case.api:
            config = config.with_api_url(case.api, fake.url)
        run = harvest_stream(config, case, fake, every=EVERY)

    final = run.final
    assert final["status"] == "completed success", (final["errors"], final["warnings"])
    assert run.rest.warcs >= 2, "the WARC was never rotated"
    reconnects = len(run.sent) - 2  # connections past the first of each run
    assert reconnects >= 2
    segments = check_stream_bytes(run, list(case.credentials.values()))
    bodies = check_bodies(run.rest, list(case.credentials.values()), complete=True) if run.rest.served else 0
    items = check_stream_items(run, case)
    unread = len(set(run.published) - set(run.exported))  # none where the stream backfills
    print(f"fidelity {case.name}: {len(run.sent)} connections ({reconnects} reconnects), {segments} segments "
          f"compared, {bodies} other bodies compared, {items} items checked, {len(run.down)} published while no "
          f"harvest ran, {unread} published never read, {run.rest.warcs} WARCs")
